"""What an oracle task's files hold, and how they are written (no JAX: the run folder code
imports this before any run starts)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO

ARRAYS = ("X", "train_idx", "y_train", "f", "y", "noise_var", "post_mean", "post_var")
"""The array fields of :class:`~udora.oracle.task.OracleTask`, in original units: ``X``
(N, d), ``train_idx`` (n,), ``y_train`` (n,), the rest (N,). Its files store them and its
fingerprint hashes them."""


def atomic_write(path: Path, write: Callable[[IO[bytes]], object]) -> None:
    """Call ``write(fh)`` on a temporary file beside ``path``, then rename it to ``path``:
    readers see the old file or the whole new one, never a part."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
