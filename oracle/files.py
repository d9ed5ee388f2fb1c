"""What an oracle task's files hold (no JAX: the run folder code imports this before any
run starts); :mod:`udora.oracle.atomic` writes them."""

from __future__ import annotations

import hashlib
from pathlib import Path

ARRAYS = ("X", "train_idx", "y_train", "f", "y", "noise_var", "post_mean", "post_var")
"""The array fields of :class:`~udora.oracle.task.OracleTask`, in original units: ``X``
(N, d), ``train_idx`` (n,), ``y_train`` (n,), the rest (N,). Its files store them and its
fingerprint hashes them."""
SHAPES = {
    "X": "N d",
    "train_idx": "n",
    "y_train": "n",
    **{name: "N" for name in ARRAYS[3:]},
}
"""The axes of each of :data:`ARRAYS`, as :func:`udora.oracle.reading.shaped` checks them."""


def file_checksum(path: str | Path) -> str:
    """The hex SHA-256 of a file's bytes (a data table, a run's predictions)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
