"""The run record: one typed model of ``result.json`` and the one way a run folder is
written (:func:`write_run`).

Every writer builds a :class:`RunRecord` (a built-in run, :mod:`udora.experiments.run.
execute`; a predictions file scored from outside udora, :mod:`udora.experiments.open.
score`) and every reader gets one back (:func:`udora.experiments.run.records.read_run`),
so a field is named and typed here once (docs/running.md, "What a finished run is").
Fields that records of earlier schema-2 versions lack (``task_hash``, ``code``,
``compute``, ``files``, ...) default to None or empty when read, and a record is written
with exactly the fields its writer set.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
)

from udora.oracle.atomic import publish_folder, write_npz, write_text
from udora.oracle.files import file_checksum as file_sha256
from udora.oracle.kinds import REGRESSION

SCHEMA = 2
"""The ``result.json`` layout written since udora 0.2.0 (0.1.0 wrote no ``schema``)."""
RESULT, PREDICTIONS = "result.json", "predictions.npz"
Number = StrictFloat | StrictInt


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Code(_Part):
    """The code that ran (:func:`udora.experiments.run.provenance.code_identity`)."""

    source_sha256: StrictStr
    commit: StrictStr | None
    dirty: StrictBool | None


class Threads(_Part):
    """The thread caps the process started with (environment values, unset is None)."""

    omp: StrictStr | None
    openblas: StrictStr | None
    xla_multi_thread_eigen: StrictBool


class Compute(_Part):
    """Where it ran (:func:`udora.experiments.run.provenance.compute`)."""

    cpus: StrictInt
    threads: Threads
    jax_backend: StrictStr
    machine: StrictStr


class External(_Part):
    """A run scored from a predictions file made outside udora
    (docs/evaluate_any_model.md): its form, file name and checksum."""

    form: Literal["split", "members", "draws", "gaussian", "samples", "quantiles", "probs"]
    file: StrictStr
    sha256: StrictStr
    split: StrictBool


class RunRecord(BaseModel):
    """``result.json`` of one run (module doc), fields in the order they are written.

    ``identity`` is what ``config_hash`` hashes and ``task_hash`` the hash of its task and
    seed (:mod:`udora.experiments.run.spec`); ``versions`` are the distributions the
    method declares (:func:`udora.experiments.run.provenance.versions`); ``files`` maps
    each file of the folder to its SHA-256 (None in records written before checksums).
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schema_: Literal[2] = Field(alias="schema")
    kind: StrictStr = REGRESSION  # the task kind (udora.oracle.kinds); absent before kinds
    preset: StrictStr
    preset_arg: StrictStr | None = None
    method: StrictStr
    seed: StrictInt
    overrides: dict[str, Any] | None = None
    label: StrictStr | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    config_hash: StrictStr
    task_hash: StrictStr | None = None
    identity: dict[str, Any]
    preset_config: dict[str, Any] = Field(default_factory=dict)
    versions: dict[str, StrictStr] = Field(default_factory=dict)
    code: Code | None = None
    compute: Compute | None = None
    status: Literal["ok", "failed", "skipped"]
    error: StrictStr | None = None
    metrics: dict[str, Number | None]
    metrics_se: dict[str, Number | None] | None = None  # Monte Carlo errors of sampled targets
    curves: dict[str, list[Number | None]] = Field(default_factory=dict)
    timings: dict[str, Number] = Field(default_factory=dict)
    config_source: StrictStr | dict[str, Any] | None = None  # "default", "external", a tuned file
    data_source: dict[str, StrictStr] | None = None  # kind, location, sha256
    oracle_sha256: StrictStr | None = None  # of the stored oracle arrays it was scored on
    diagnostics: dict[str, Number | None] | None = None  # the method's own, of an ok run
    traceback: StrictStr | None = None  # of a failed run
    reason: StrictStr | None = None  # of a skipped run
    external: External | None = None
    files: dict[str, StrictStr] | None = None

    def to_json(self) -> str:
        """The record as ``result.json`` holds it: the fields set, strict JSON."""
        data = self.model_dump(mode="json", by_alias=True, exclude_unset=True)
        return json.dumps(data, indent=1, allow_nan=False)


def write_run(
    final: Path,
    record: RunRecord,
    arrays: Mapping[str, Any] | None,
    *,
    replace: Callable[[Path], bool] = lambda old: True,
) -> RunRecord | None:
    """Publish the run folder ``final``: ``predictions.npz`` of ``arrays`` (when given) and
    ``result.json`` of ``record`` listing its checksum under ``files``; returns the record
    written, or None when ``replace(old)`` kept a folder already at ``final``
    (:func:`udora.oracle.atomic.publish_folder`). A reader sees the old folder or the new
    one, whole."""
    written = record

    def fill(tmp: Path) -> None:
        nonlocal written
        files = {}
        if arrays is not None:
            write_npz(tmp / PREDICTIONS, arrays)
            files[PREDICTIONS] = file_sha256(tmp / PREDICTIONS)
        written = record.model_copy(update={"files": files})
        written.model_fields_set.add("files")
        write_text(tmp / RESULT, written.to_json())

    return written if publish_folder(final, fill, replace=replace) else None
