"""Load a preset's raw table (covariates then target) from wherever it is found.

Order: the data directory (``data_dir`` argument or ``UDORA_DATA_DIR``), files
``<preset>.csv.gz`` with a header of the feature names and ``target``.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from oracle.preset import Preset


class DataNotFoundError(FileNotFoundError):
    """No source of a preset's raw table could be read."""


def data_dir_from_env(data_dir: str | Path | None = None) -> Path | None:
    """``data_dir`` if given, else ``$UDORA_DATA_DIR``, else None."""
    value = data_dir if data_dir is not None else os.environ.get("UDORA_DATA_DIR")
    return Path(value).expanduser() if value else None


def load_table(preset: Preset, data_dir: str | Path | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The raw covariates (rows, d) and target (rows,) of ``preset``, float64.

    Raises:
        DataNotFoundError: no source had the file; the message lists where it looked.
        ValueError: a listed feature is missing, or a value is not finite.
    """
    folder = data_dir_from_env(data_dir)
    looked = []
    if folder is not None:
        path = folder / preset.source.file
        looked.append(str(path))
        if path.is_file():
            return _select(pd.read_csv(path), preset, str(path))
    raise DataNotFoundError(
        f"preset {preset.name!r}: no data found (looked in: {', '.join(looked) or 'no data dir'}). "
        f"Put {preset.source.file} in a folder and set UDORA_DATA_DIR (or pass --data-dir)."
    )


def _select(frame: pd.DataFrame, preset: Preset, origin: str) -> tuple[np.ndarray, np.ndarray]:
    missing = [c for c in (*preset.features, preset.target) if c not in frame.columns]
    if missing:
        raise ValueError(
            f"{origin}: columns {missing} of preset {preset.name!r} are not in the file "
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
