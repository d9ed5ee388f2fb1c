"""One way to read a run folder: :func:`read_run`.

Every reader of run folders (``bench``'s resume, the results table behind ``udora report``
and its HTML site, ``udora meta``) reads a run through :func:`read_run`, which checks, in
order (docs/running.md, "What a finished run is"):

1. ``result.json`` is a whole JSON object of this schema (``"schema": 2``; a record with
   no ``schema`` at all is udora 0.1.0's, which this udora refuses to read:
   :func:`refuse_old_results`);
2. its fields have their types (:class:`~udora.experiments.run.record.RunRecord`:
   ``status`` one of ok, failed, skipped; ``seed`` an integer; every metric a number or
   null; no unknown key; ...);
3. the folder is the record's own: ``<preset>/<method>/<config_hash>/seed-<seed>``,
   ``config_hash`` is the hash of the recorded ``identity`` and ``task_hash`` that of its
   task and seed (a copied or renamed folder,
   or an edited identity, is not a run of that config);
4. every file the record lists under ``files`` is there with its SHA-256, and an ``ok``
   run lists its ``predictions.npz`` (records written before checksums were recorded are
   checked by reading the whole archive, whose members carry CRC-32s).

A folder that fails a check is not a finished run: the grid reruns it (saying why) and the
readers skip it with a warning naming its path and the reason.
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from udora.experiments.run.checks import UsageError
from udora.experiments.run.record import PREDICTIONS, RESULT, SCHEMA, RunRecord, file_sha256
from udora.experiments.run.spec import identity_hash, task_hash
from udora.oracle import reading

__all__ = [
    "PREDICTIONS",
    "RESULT",
    "RUN_GLOB",
    "OldResultsError",
    "RunRead",
    "RunRecord",
    "file_sha256",
    "finished_run",
    "load_predictions",
    "read_run",
    "refuse_old",
    "refuse_old_results",
]
RUN_GLOB = "*/*/*/seed-*"  # the run folders under a results folder


class OldResultsError(UsageError):
    """A results folder holds runs of udora 0.1.0, which this udora does not read (a user
    error: one line, exit 2)."""


@dataclass(frozen=True)
class RunRead:
    """What :func:`read_run` found in ``folder``: the typed ``record`` (None when
    result.json is absent, unreadable or not of this schema's types) and ``problem`` (""
    for a usable run). ``written_by``: the udora version of a record of udora 0.1.0 (no
    ``schema``), which this udora does not read; ``newer``: who wrote a record of a later
    schema, which this udora neither reads nor overwrites."""

    folder: Path
    record: RunRecord | None
    problem: str = ""
    written_by: str | None = None
    newer: str | None = None  # "schema N, udora V" of a record a newer udora wrote

    @property
    def usable(self) -> bool:
        return self.record is not None and not self.problem

    @property
    def finished(self) -> bool:
        """A usable run whose status is ``ok``: a grid skips it."""
        return self.usable and self.record.status == "ok"


def _load_json(path: Path) -> tuple[dict[str, Any] | None, str]:
    try:
        return reading.json_object(path), ""
    except FileNotFoundError:
        return None, "is missing"
    except OSError as err:
        return None, f"cannot be read ({type(err).__name__}: {err})"
    except reading.BadFile as err:
        return None, err.why


def _path_in(record: Any, loc: tuple) -> list[str]:
    """The keys of a validation error's location that lead into ``record`` (pydantic adds
    the names of union members, which are not keys)."""
    path, node = [], record
    for part in loc:
        part = "schema" if part == "schema_" else part
        inside = (isinstance(node, dict) and part in node) or (
            isinstance(node, list) and isinstance(part, int) and part < len(node)
        )
        if inside:
            node = node[part]
        elif path or not isinstance(node, dict):
            continue
        path.append(str(part))
    return path


def _typed(record: dict[str, Any]) -> tuple[RunRecord | None, str]:
    try:
        return RunRecord.model_validate(record), ""
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(_path_in(record, first["loc"]))
        if first["type"] == "missing":  # the last part of the location is not in record
            where = ".".join([*_path_in(record, first["loc"][:-1]), str(first["loc"][-1])])
            return None, f"lacks the key {where!r}"
        if first["type"] == "extra_forbidden":
            return None, f"has the unknown key {where!r}"
        got = json.dumps(first.get("input"), default=str)[:60]
        return None, f"has {where!r} of the wrong type: {first['msg'].lower()} (got {got})"


def _place_problem(folder: Path, record: RunRecord) -> str:
    expected = (record.preset, record.method, record.config_hash, f"seed-{record.seed}")
    parts = folder.absolute().parts
    found = tuple(parts[-4:]) if len(parts) > 4 else tuple(parts)
    if found != expected:
        return (
            f"is a run of {'/'.join(expected)}, not of the folder it is in "
            f"({'/'.join(found)}; copied or renamed?)"
        )
    if identity_hash(record.identity) != record.config_hash:
        return "has an identity whose hash is not its config_hash (edited?)"
    task = record.task_hash is not None and "task" in record.identity
    if task and record.task_hash != task_hash(record.identity, record.seed):
        return "has a task_hash that is not the hash of its task and seed (edited?)"
    return ""


def _files_problem(folder: Path, record: RunRecord) -> str:
    files = record.files
    if files is None:  # written before checksums were recorded: test the archive's CRCs
        if record.status != "ok":
            return ""
        try:
            with zipfile.ZipFile(folder / PREDICTIONS) as archive:
                bad = archive.testzip()
        except (OSError, zipfile.BadZipFile) as err:
            return f"has an unreadable {PREDICTIONS} ({type(err).__name__}: {err})"
        return f"has a corrupt {PREDICTIONS} (member {bad})" if bad else ""
    if record.status == "ok" and PREDICTIONS not in files:
        return f"says ok but lists no {PREDICTIONS}"
    for name, sha in sorted(files.items()):
        path = folder / name
        if not path.is_file():
            return f"lists {name}, which is missing"
        if file_sha256(path) != sha:
            return f"has a {name} that does not match its checksum (truncated or changed?)"
    return ""


def _written_by(record: dict[str, Any]) -> str | None:
    """The udora version of a record of udora 0.1.0 (an object with no ``schema`` at all;
    one with another ``schema`` is a damaged record), else None."""
    if "schema" in record:
        return None
    versions = record.get("versions")
    version = versions.get("udora") if isinstance(versions, dict) else None
    return str(version or "0.1.0")


def _old_line(results_dir: Path, found: RunRead) -> str:
    where = (found.folder / RESULT).relative_to(results_dir)
    return (
        f"{results_dir}: holds runs written by udora {found.written_by} (e.g. {where}), "
        "whose config hashes and task standardisation this udora does not share; "
        "run into a new results folder (--out), or read it with that udora"
    )


def read_run(folder: str | Path, *, verify_files: bool = True) -> RunRead:
    """Read and check the run folder ``folder`` (module doc); never raises for a bad
    folder. ``verify_files=False`` skips step 4 (for a reader that opens no file)."""
    folder = Path(folder)
    raw, problem = _load_json(folder / RESULT)
    if raw is None:
        return RunRead(folder, None, problem)
    written_by = _written_by(raw)
    if written_by is not None:
        return RunRead(folder, None, f"was written by udora {written_by}", written_by)
    newer = _newer(raw)
    if newer is not None:
        return RunRead(folder, None, f"was written by a newer udora ({newer})", newer=newer)
    record, problem = _typed(raw)
    if record is None:
        return RunRead(folder, None, problem)
    problem = _place_problem(folder, record)
    if not problem and verify_files:
        problem = _files_problem(folder, record)
    return RunRead(folder, record, problem)


def _newer(raw: dict[str, Any]) -> str | None:
    """``"schema N, udora V"`` when the record's schema is later than this udora's."""
    schema = raw.get("schema")
    if isinstance(schema, int) and not isinstance(schema, bool) and schema > SCHEMA:
        versions = raw.get("versions") if isinstance(raw.get("versions"), dict) else {}
        return f"schema {schema}, udora {versions.get('udora', 'unknown')}"
    return None


def refuse_old(results_dir: Path, found: RunRead) -> None:
    """Raise :class:`OldResultsError` (one line: who wrote it, what to do) when ``found``
    is a run of udora 0.1.0 under ``results_dir``."""
    if found.written_by is not None:
        raise OldResultsError(_old_line(Path(results_dir), found))


def refuse_old_results(results_dir: str | Path) -> None:
    """Raise :class:`OldResultsError` when any run folder under ``results_dir`` holds a
    record of udora 0.1.0: its runs are not comparable with this udora's, and a results
    folder is never silently half read."""
    results_dir = Path(results_dir)
    for folder in sorted(results_dir.glob(RUN_GLOB)):
        raw, _ = _load_json(folder / RESULT)
        if raw is not None and _written_by(raw) is not None:
            refuse_old(results_dir, RunRead(folder, None, "", _written_by(raw)))


def finished_run(folder: str | Path) -> RunRead:
    """:func:`read_run` of a folder that must be a finished run; raises ValueError naming
    the folder and the problem when it is not (it changed since a table was read)."""
    found = read_run(folder)
    if not found.finished:
        raise ValueError(f"{folder}: not a finished run: {found.problem or 'status not ok'}")
    return found


def load_predictions(found: RunRead) -> dict[str, np.ndarray]:
    """The arrays of the finished run ``found`` (:func:`finished_run`): ``mean``,
    ``aleatoric``, ``epistemic`` (N,) and ``member_means`` (K, N) when present."""
    return reading.arrays(found.folder / PREDICTIONS)
