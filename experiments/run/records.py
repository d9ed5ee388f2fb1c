"""One way to read a run folder: :func:`read_run`.

Every reader of run folders (``bench``'s resume, the results table behind ``udora report``
and its HTML site, ``udora meta``) reads a run through :func:`read_run`, which checks, in
order (docs/running.md, "What a finished run is"):

1. ``result.json`` is a whole JSON object of this schema (``"schema": 2``; a record with
   no ``schema`` at all is udora 0.1.0's, reported as ``legacy`` and never reused);
2. its fields have their types (:class:`RunRecord`: ``status`` one of ok, failed, skipped;
   ``seed`` an integer; every metric a number or null; ...);
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

import hashlib
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
)

from udora.experiments.run.legacy import is_legacy
from udora.experiments.run.spec import identity_hash, task_hash

RESULT = "result.json"
RUN_GLOB = "*/*/*/seed-*"  # the run folders under a results folder
PREDICTIONS = "predictions.npz"
Number = StrictFloat | StrictInt


class RunRecord(BaseModel):
    """The fields of ``result.json`` that readers rely on, with their types (more may be
    present: spec, config, preset, versions, diagnostics)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    schema_: Literal[2] = Field(alias="schema")
    preset: StrictStr
    method: StrictStr
    seed: StrictInt
    status: Literal["ok", "failed", "skipped"]
    config_hash: StrictStr
    identity: dict[str, Any]
    metrics: dict[str, Number | None]
    overrides: dict[str, Any] | None = None
    timings: dict[str, Number] = Field(default_factory=dict)
    curves: dict[str, list[Number | None]] = Field(default_factory=dict)
    error: StrictStr | None = None
    files: dict[str, StrictStr] | None = None  # {file name: sha256}; None before checksums


@dataclass(frozen=True)
class RunRead:
    """What :func:`read_run` found in ``folder``: the ``record`` (None when result.json is
    absent or cannot be read) and ``problem`` ("" for a usable run). ``legacy``: a record
    of udora 0.1.0 (kept, never reused or reported)."""

    folder: Path
    record: dict[str, Any] | None
    problem: str = ""
    legacy: bool = False

    @property
    def usable(self) -> bool:
        return self.record is not None and not self.problem and not self.legacy

    @property
    def finished(self) -> bool:
        """A usable run whose status is ``ok``: a grid skips it."""
        return self.usable and self.record["status"] == "ok"


def file_sha256(path: str | Path) -> str:
    """The hex SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _load_json(path: Path) -> tuple[dict[str, Any] | None, str]:
    try:
        record = json.loads(path.read_text())
    except FileNotFoundError:
        return None, "is missing"
    except (OSError, UnicodeDecodeError) as err:
        return None, f"cannot be read ({type(err).__name__}: {err})"
    except json.JSONDecodeError as err:
        return None, f"is not valid JSON (truncated or empty? {err})"
    if not isinstance(record, dict):
        return None, f"holds a JSON {type(record).__name__}, not an object"
    return record, ""


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


def _type_problem(record: dict[str, Any]) -> str:
    try:
        RunRecord.model_validate(record)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(_path_in(record, first["loc"]))
        if first["type"] == "missing":
            return f"lacks the key {where!r}"
        got = json.dumps(first.get("input"), default=str)[:60]
        return f"has {where!r} of the wrong type: {first['msg'].lower()} (got {got})"
    return ""


def _place_problem(folder: Path, record: dict[str, Any]) -> str:
    expected = (record["preset"], record["method"], record["config_hash"], f"seed-{record['seed']}")
    parts = folder.absolute().parts
    found = tuple(parts[-4:]) if len(parts) > 4 else tuple(parts)
    if found != expected:
        return (
            f"is a run of {'/'.join(expected)}, not of the folder it is in "
            f"({'/'.join(found)}; copied or renamed?)"
        )
    if identity_hash(record["identity"]) != record["config_hash"]:
        return "has an identity whose hash is not its config_hash (edited?)"
    task = "task_hash" in record and "task" in record["identity"]
    if task and record["task_hash"] != task_hash(record["identity"], record["seed"]):
        return "has a task_hash that is not the hash of its task and seed (edited?)"
    return ""


def _files_problem(folder: Path, record: dict[str, Any]) -> str:
    files = record.get("files")
    if files is None:  # written before checksums were recorded: test the archive's CRCs
        if record["status"] != "ok":
            return ""
        try:
            with zipfile.ZipFile(folder / PREDICTIONS) as archive:
                bad = archive.testzip()
        except (OSError, zipfile.BadZipFile) as err:
            return f"has an unreadable {PREDICTIONS} ({type(err).__name__}: {err})"
        return f"has a corrupt {PREDICTIONS} (member {bad})" if bad else ""
    if record["status"] == "ok" and PREDICTIONS not in files:
        return f"says ok but lists no {PREDICTIONS}"
    for name, sha in sorted(files.items()):
        path = folder / name
        if not path.is_file():
            return f"lists {name}, which is missing"
        if file_sha256(path) != sha:
            return f"has a {name} that does not match its checksum (truncated or changed?)"
    return ""


def read_run(folder: str | Path, *, verify_files: bool = True) -> RunRead:
    """Read and check the run folder ``folder`` (module doc); never raises for a bad
    folder. ``verify_files=False`` skips step 4 (for a reader that opens no file)."""
    folder = Path(folder)
    record, problem = _load_json(folder / RESULT)
    if record is None:
        return RunRead(folder, None, problem)
    if is_legacy(record):
        return RunRead(folder, record, "was written by udora 0.1.0", legacy=True)
    problem = _type_problem(record) or _place_problem(folder, record)
    if not problem and verify_files:
        problem = _files_problem(folder, record)
    return RunRead(folder, record, problem)


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
    with np.load(found.folder / PREDICTIONS) as archive:
        return {name: archive[name] for name in archive.files}
