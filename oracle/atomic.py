"""Publish a file or a folder whole or not at all: the one way udora writes what others read.

Everything is first written under a temporary sibling name, ``.<name>.<random>.tmp``,
unique per writer (two processes writing one target never share a temporary file), then
renamed onto the target. A reader sees the old version or the whole new one, never a
part, and a crash leaves at most a ``.tmp`` sibling, which the next command removes
(docs/design.md, "The life of a run", step 7).

- A **file** is replaced by ``rename``, which is atomic on POSIX: when two writers
  publish one file at once, the last rename wins and the file is one writer's whole.
- A **folder** cannot be renamed onto a non-empty folder, so :func:`publish_folder` asks
  the caller what an existing one is: ``replace(old)`` True moves the old folder aside
  (to a temporary name, then deletes it) and publishes the new one, so the last
  publisher wins; False keeps the old folder and discards the new one, so the first
  publisher wins (a finished trial is never rewritten).

Files and folders get the modes the umask gives, like ``open`` and ``mkdir``
(``tempfile.mkstemp`` would make them private). No JAX here: every layer imports this.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

TEMPORARY = ".tmp"
"""The suffix of every temporary name (``.<name>.<random>.tmp``)."""


def temporary_name(path: Path) -> Path:
    """A fresh temporary sibling of ``path``: ``.<name>.<8 random hex digits>.tmp``."""
    return path.with_name(f".{path.name}.{secrets.token_hex(4)}{TEMPORARY}")


def write_with(path: str | Path, write: Callable[[IO[bytes]], object]) -> Path:
    """Call ``write(fh)`` on a new temporary file beside ``path``, then rename it onto
    ``path`` (module doc); the parent folder is made when missing. Returns ``path``.

    An OSError that names no file (``fh.write`` on a full disk) is raised naming ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        tmp = temporary_name(path)
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            break
        except FileExistsError:
            continue
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
        os.replace(tmp, path)
    except BaseException as err:
        tmp.unlink(missing_ok=True)
        if isinstance(err, OSError) and err.errno is not None and err.filename is None:
            err.filename = str(path)  # a write to the handle (a full disk) names no file
        raise
    return path


def write_bytes(path: str | Path, data: bytes) -> Path:
    """Publish ``data`` as the file ``path``."""
    return write_with(path, lambda fh: fh.write(data))


def write_text(path: str | Path, text: str) -> Path:
    """Publish ``text`` as the UTF-8 file ``path``."""
    return write_bytes(path, text.encode())


def write_json(path: str | Path, value: Any, *, indent: int | None = 1, **options: Any) -> Path:
    """Publish ``value`` as strict JSON (no NaN unless ``allow_nan=True`` is passed);
    ``options`` go to :func:`json.dumps`."""
    options.setdefault("allow_nan", False)
    return write_text(path, json.dumps(value, indent=indent, **options))


def write_npz(path: str | Path, arrays: Mapping[str, Any]) -> Path:
    """Publish ``arrays`` as an uncompressed ``.npz`` archive (:func:`numpy.savez`)."""
    import numpy as np

    return write_with(path, lambda fh: np.savez(fh, **arrays))


def write_parquet(path: str | Path, table: Any) -> Path:
    """Publish the pandas DataFrame ``table`` as a parquet file, without its index."""
    return write_with(path, lambda fh: table.to_parquet(fh, index=False))


def write_figure(path: str | Path, fig: Any, **options: Any) -> Path:
    """Publish the matplotlib figure ``fig`` as ``path``, in the format its suffix names
    (``.png``, ``.pdf``); ``options`` (``dpi``, ``bbox_inches``) go to ``fig.savefig``."""
    path = Path(path)
    return write_with(path, lambda fh: fig.savefig(fh, format=path.suffix[1:], **options))


def _make_temporary_dir(final: Path) -> Path:
    while True:
        tmp = temporary_name(final)
        try:
            tmp.mkdir()  # like mkdir: the umask applies (mkdtemp would make it 0700)
            return tmp
        except FileExistsError:
            continue


def publish_folder(
    final: str | Path,
    fill: Callable[[Path], None],
    *,
    replace: Callable[[Path], bool] = lambda old: True,
) -> bool:
    """Make the folder ``final`` appear whole: ``fill(tmp)`` writes a new temporary
    sibling folder, which is then renamed onto ``final``. When ``final`` exists,
    ``replace(final)`` says whether it goes (the last publisher wins) or stays (the first
    wins; the new folder is discarded). Returns whether this call's folder was published.
    On any error (also in ``fill``) the temporary folder is removed and the error raised.
    """
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = _make_temporary_dir(final)
    try:
        fill(tmp)
        while True:
            try:
                os.rename(tmp, final)
                return True
            except OSError as err:
                if err.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                    raise
            if not replace(final):
                shutil.rmtree(tmp)
                return False
            aside = temporary_name(final)
            try:
                os.rename(final, aside)
            except FileNotFoundError:  # another writer moved it first: try again
                continue
            shutil.rmtree(aside, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
