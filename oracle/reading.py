"""Read a file that a user, another program or a crash may have damaged: what it holds,
or one :class:`BadFile` (a user error) naming the file and what is wrong with it.

The counterpart of :mod:`udora.oracle.atomic`: every JSON, YAML, ``.npz`` and table file
udora reads back goes through one function here, so no damaged file reaches a command
as a traceback: not cut short (a truncated JSON, YAML or zip archive), not the wrong
kind of file (a ``.npy`` array where a ``.npz`` archive belongs, bytes that are not
UTF-8), not nested so deep that the parser's recursion runs out (100 000 ``[``), not an
array header that claims more bytes than the archive holds (numpy would try to
allocate them). What the value means (its keys, types and shapes) is checked by each
reader; :func:`json_object`, :func:`arrays` with ``names``, and :func:`numbers` cover
the common parts. Nothing here runs code from a file: YAML is read by a safe loader and
arrays refuse pickles. No JAX here: every layer imports this.
"""

from __future__ import annotations

import gzip
import io
import json
import zipfile
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from udora.errors import UserError

NPY_MAGIC = b"\x93NUMPY"


class BadFile(UserError):
    """A file that is not what it should be: ``path`` and ``why`` (the message without
    the path, for readers that report it in their own words, e.g. a skipped run)."""

    def __init__(self, path: str | Path, why: str) -> None:
        super().__init__(f"{path}: {why}")
        self.path, self.why = Path(path), why


def text(path: str | Path) -> str:
    """The UTF-8 text of ``path`` (gzip-compressed when its name ends in ``.gz``). A
    missing or unreadable file raises its OSError (which names it); a broken gzip stream
    or bytes that are not UTF-8 are a :class:`BadFile`."""
    data = Path(path).read_bytes()
    if Path(path).suffix == ".gz":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as err:
            why = f"is not a whole gzip file (truncated?): {_one_line(err)}"
            raise BadFile(path, why) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise BadFile(path, f"is not UTF-8 text (byte {err.start}); a binary file?") from None


def _one_line(message: object) -> str:
    return " ".join(str(message).split())


def brief(value: object, limit: int = 60) -> str:
    """``repr(value)``, cut to ``limit`` characters: how a message quotes what a file
    holds (a column name may be megabytes long)."""
    shown = repr(value)
    return shown if len(shown) <= limit else f"{shown[: limit - 3]}..."


def json_value(path: str | Path) -> Any:
    """The JSON value in ``path`` (module doc for what is refused)."""
    raw = text(path)
    try:
        return json.loads(raw)
    except json.JSONDecodeError as err:
        cut = " (truncated?)" if err.pos >= len(raw.rstrip()) else ""
        cut = " (empty)" if not raw.strip() else cut
        raise BadFile(
            path, f"is not valid JSON{cut}: {err.msg} (line {err.lineno}, column {err.colno})"
        ) from None
    except RecursionError:
        raise BadFile(path, "is not valid JSON: nested too deeply to read") from None


def kind_of(value: Any) -> str:
    """How a message names the type of a parsed value: a list, a string, a number, ..."""
    names = {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean"}
    if value is None:
        return "nothing (null)"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return "a number"
    return names.get(type(value), f"a {type(value).__name__}")


def json_object(path: str | Path) -> dict[str, Any]:
    """The JSON object (mapping) in ``path``; any other value is a :class:`BadFile`."""
    value = json_value(path)
    if not isinstance(value, dict):
        raise BadFile(path, f"holds {kind_of(value)}, not a JSON object")
    return value


def yaml_value(path: str | Path, source: str | None = None) -> Any:
    """The YAML value in ``path`` (``source``: its text, when already read); an empty
    file is None."""
    raw = text(path) if source is None else source
    try:  # libyaml's loader where PyYAML has it: 50 times faster on a multi-megabyte
        # line, and it stops at 1000 levels of nesting; both are safe loaders
        return yaml.load(raw, Loader=yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise BadFile(path, f"is not valid YAML{where}: {_one_line(err.problem)}") from None
    except yaml.YAMLError as err:
        raise BadFile(path, f"is not valid YAML: {_one_line(err)}") from None
    except RecursionError:
        raise BadFile(path, "is not valid YAML: nested too deeply to read") from None


def yaml_mapping(path: str | Path, what: str = "keys") -> dict[str, Any]:
    """The YAML mapping in ``path``; anything else (a scalar, a list, an empty file) is
    a :class:`BadFile` saying it expected a mapping of ``what``."""
    value = yaml_value(path)
    if not isinstance(value, dict):
        raise BadFile(path, f"holds {kind_of(value)}, not a mapping of {what}")
    return value


def _member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, path: Path) -> np.ndarray:
    """One ``.npy`` member, after checking that its header's shape fits its size."""
    name = brief(info.filename.removesuffix(".npy"))
    fmt = np.lib.format
    with archive.open(info, mode="r") as fh:
        try:
            version = fmt.read_magic(fh)
            header = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
            shape, fortran, dtype = header(fh)
        except ValueError as err:  # no magic, a header over 10 000 bytes, not a dict
            why = _one_line(err).split(". ")[0]
            raise BadFile(path, f"has array {name} with no readable .npy header ({why})") from None
        if dtype.hasobject:
            raise BadFile(path, f"has array {name} of Python objects, which udora never loads")
        claimed = int(np.prod(shape, dtype=object)) * dtype.itemsize
        held = info.file_size - fh.tell()
        if claimed != held:
            raise BadFile(
                path,
                f"has array {name} whose header claims shape {tuple(shape)} of {dtype} "
                f"({claimed} bytes) but which holds {held} bytes (truncated or edited?)",
            )
        data = fh.read(held)
    array = np.frombuffer(data, dtype=dtype)
    return array.reshape(shape, order="F" if fortran else "C").copy()


def arrays(
    path: str | Path, names: Iterable[str] | None = None, data: bytes | None = None
) -> dict[str, np.ndarray]:
    """The arrays of the ``.npz`` archive ``path`` (``np.savez``), by name; with
    ``names``, only those, and a missing one is a :class:`BadFile`. Each member's header
    is checked against its size before anything is allocated. ``data``: the file's bytes,
    when the caller has read them (to check a checksum)."""
    path = Path(path)
    wanted = None if names is None else list(names)
    try:
        with zipfile.ZipFile(path if data is None else io.BytesIO(data)) as archive:
            members = {i.filename.removesuffix(".npy"): i for i in archive.infolist()}
            missing = [n for n in wanted or () if n not in members]
            if missing:
                have = ", ".join(brief(n) for n in sorted(members)[:20]) or "none"
                lacks = ", ".join(map(repr, missing))
                raise BadFile(path, f"has no array {lacks} (it has: {have})")
            chosen = members if wanted is None else {n: members[n] for n in wanted}
            return {n: _member(archive, info, path) for n, info in chosen.items()}
    except zipfile.BadZipFile as err:
        if _starts_with(path, NPY_MAGIC):
            raise BadFile(path, "is a single .npy array, not a .npz archive (np.savez)") from None
        raise BadFile(path, f"is not a readable .npz archive (truncated?): {err}") from None
    except (EOFError, zlib.error, NotImplementedError) as err:
        raise BadFile(path, f"is not a readable .npz archive: {_one_line(err)}") from None
    except MemoryError:
        raise BadFile(path, "claims arrays larger than this machine can hold") from None


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as fh:
        if fh.seek(0, 2) == 0:
            return True  # empty: pandas says so
        fh.seek(-1, 2)
        return fh.read(1) in (b"\n", b"\r")


def _starts_with(path: Path, prefix: bytes) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(len(prefix)) == prefix
    except OSError:
        return False


def shaped(path: str | Path, found: dict[str, np.ndarray], spec: dict[str, str]) -> dict[str, int]:
    """Check the arrays ``found`` (read from ``path``) against ``spec``, ``{name: "N d"}``:
    each named array holds numbers and has one axis per letter, and a letter is one size
    wherever it appears. Returns the sizes ``{"N": 120, "d": 2}``; a mismatch is a
    :class:`BadFile` naming the array and both shapes."""
    sizes: dict[str, int] = {}
    for name, axes in spec.items():
        array, letters = found[name], axes.split()
        if array.dtype.kind not in "biuf":
            raise BadFile(path, f"has array {name!r} of {array.dtype}, not of numbers")
        if array.ndim != len(letters):
            want = f"({', '.join(letters)})" if letters else "a scalar"
            raise BadFile(path, f"has array {name!r} of shape {array.shape}, expected {want}")
        for letter, size in zip(letters, array.shape, strict=True):
            if sizes.setdefault(letter, size) != size:
                others = [n for n, a in spec.items() if letter in a.split() and n != name]
                raise BadFile(
                    path,
                    f"has array {name!r} of shape {array.shape}, whose {letter} = {size} is "
                    f"not the {sizes[letter]} of {others[0]!r}",
                )
    return sizes


def table(path: str | Path, *, whole_lines: bool = False, **options: Any) -> Any:
    """The table in ``path`` as a pandas DataFrame: ``.parquet``, else CSV (``.csv``,
    ``.csv.gz``: compression by suffix; ``options`` go to ``pandas.read_csv``).

    pandas reads a CSV file cut in the middle of a row as a shorter last row; with
    ``whole_lines`` (a table udora wrote, which ends with a line break) a plain ``.csv``
    that does not end with one is a :class:`BadFile`."""
    import pandas as pd

    path = Path(path)
    form = "parquet" if path.suffix == ".parquet" else "CSV"
    if whole_lines and path.suffix == ".csv" and not _ends_with_newline(path):
        raise BadFile(path, "does not end with a line break: cut short?")
    try:
        if form == "parquet":
            return pd.read_parquet(path)
        return pd.read_csv(path, **options)
    except (FileNotFoundError, PermissionError, IsADirectoryError):
        raise
    except UnicodeDecodeError:
        raise BadFile(path, f"{_not_utf8(path)}; save it as UTF-8") from None
    except pd.errors.EmptyDataError:
        size = path.stat().st_size
        what = "0 bytes" if size == 0 else f"{size} bytes that hold no text"
        raise BadFile(
            path, f"is empty ({what}); expected a CSV header line and one line per row"
        ) from None
    except (ValueError, OSError, EOFError, zlib.error, MemoryError) as err:
        # pandas' parser errors and pyarrow's ArrowInvalid are ValueErrors; a broken gzip
        # stream is an OSError with no errno, or an EOFError
        why = _one_line(err)[:200] or type(err).__name__
        raise BadFile(path, f"cannot be read as a {form} table (truncated?): {why}") from None


def _not_utf8(path: Path) -> str:
    """Where in ``path`` (gzip when named ``.gz``) its first byte that is not UTF-8 is:
    line, column (from the header's commas), the byte."""
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
    column = f", column {brief(header[field])}" if field < len(header) else ""
    return f"line {line}{column}: byte 0x{raw[at]:02x} is not UTF-8 text"


def numbers(frame: Any, columns: Iterable[str], path: str | Path) -> Any:
    """``frame`` (a table read from ``path``) with each of ``columns`` it has as numbers:
    a column of text that holds numbers only is converted; one with any other text is a
    :class:`BadFile` naming the column, the row and the value."""
    import pandas as pd

    for column in columns:
        if column not in frame or pd.api.types.is_numeric_dtype(frame[column].dtype):
            continue
        values = frame[column]
        if isinstance(values.dtype, pd.CategoricalDtype):  # OpenML's nominal columns
            values = values.astype(object)
        numeric = pd.to_numeric(values, errors="coerce")
        bad = values[numeric.isna() & values.notna()]
        if len(bad):
            raise BadFile(
                path,
                f"has {brief(bad.iloc[0])} in column {brief(column)} (row {bad.index[0]}), "
                f"not a number (rows affected: {len(bad)})",
            )
        frame = frame.assign(**{column: numeric})
    return frame
