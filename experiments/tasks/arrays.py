"""Each task's oracle arrays, stored once in the results folder beside its runs.

A run writes ``<results>/oracle/<task_hash>.npz`` (the pool ``X`` (N, d), ``train_idx``
(n,), ``y_train`` (n,), ``f``, ``y``, ``noise_var``, ``post_mean``, ``post_var`` (N,)
each, float64), for a regression task its joint batches beside them
(``joint/<task_hash>.npz``: ``joint_idx``, ``joint_design``, ``joint_post_cov``, written
when missing, so a folder stored before them gains them with its next run) and
``<task_hash>.json`` (the preset config, seed, the task's meta with its
data source, and the sha256 of the ``.npz``) when they are not there yet; both appear
whole or not at all (written beside, then renamed). Analyses that rescore stored
predictions (``udora meta``) read them instead of building the Gaussian process again
(seconds to minutes a task). The task hash (docs/running.md, "What a finished run is")
covers the preset, the data table's checksum and the seed, so every method's run of a
task shares one file. A file whose checksum does not match is an error naming it.

A sweep folder keeps, the same way, the exact posterior given a trial's fit part (the
training points a tuning split fits on), ``oracle/<task_hash>-fit-<split hash>.npz`` with
``post_mean`` and ``post_var`` (N,) (:func:`store_posterior`, :func:`load_posterior`):
every trial of a sweep shares its split, so its oracle analysis conditions the GP once
per sweep, not once per worker.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from udora.errors import UserError
from udora.names import check_name, inside
from udora.oracle import reading
from udora.oracle.atomic import write_bytes, write_json
from udora.oracle.files import ARRAYS, SHAPES
from udora.oracle.joint import JointBatches

FOLDER = "oracle"
JOINT = "joint"  # oracle/joint/<task_hash>.npz: a regression task's joint batches


@dataclass(frozen=True)
class StoredTask:
    """A task's arrays as stored (original units); the fields an analysis reads of an
    :class:`~udora.oracle.task.OracleTask`, without its prior."""

    preset_config: dict[str, Any]
    seed: int
    X: np.ndarray
    train_idx: np.ndarray
    y_train: np.ndarray
    f: np.ndarray
    y: np.ndarray
    noise_var: np.ndarray
    post_mean: np.ndarray
    post_var: np.ndarray
    meta: dict[str, Any] = field(default_factory=dict)
    joint: JointBatches | None = None  # stored by runs since the joint metrics (issue 47)


def paths(root: str | Path, task_hash: str, sub: str = "") -> tuple[Path, Path]:
    """``(arrays .npz, record .json)`` of ``task_hash`` under the results folder ``root``
    (in ``oracle/<sub>/`` for a part stored apart, such as :data:`JOINT`)."""
    folder = Path(root) / FOLDER / sub if sub else Path(root) / FOLDER
    inside(root, folder / check_name(task_hash, "task hash"))  # a planted link leads nowhere
    return folder / f"{task_hash}.npz", folder / f"{task_hash}.json"


def store(
    root: str | Path, task_hash: str, task: Any, arrays: dict[str, np.ndarray] | None = None
) -> Path:
    """Write ``task``'s arrays under ``root`` unless a whole copy is there; the ``.npz``.

    ``task`` is an :class:`~udora.oracle.task.OracleTask` (or anything with its array
    fields, ``preset``, ``seed`` and ``meta``); ``arrays`` (default: the regression task's
    :data:`~udora.oracle.files.ARRAYS`) are what is kept, as a task kind says
    (:class:`udora.experiments.tasks.kinds.RunKind`).
    """
    entry = _record(task_hash, task)
    if arrays is None:
        arrays = {name: np.asarray(getattr(task, name)) for name in ARRAYS}
    batches = getattr(task, "joint", None)  # a regression task's joint batches
    if batches is not None:  # beside, so that a folder stored before them gains them
        _write(root, task_hash, batches.to_arrays(), {"task_hash": task_hash}, JOINT)
    return _write(root, task_hash, arrays, entry)


def _record(task_hash: str, task: Any) -> dict[str, Any]:
    """The record :func:`store` writes beside ``task``'s arrays (before their sha256)."""
    return {
        "task_hash": task_hash,
        "seed": int(task.seed),
        "preset_config": task.preset.model_dump(mode="json"),
        "meta": {k: v for k, v in task.meta.items() if _is_json(v)},
    }


def packed(task: Any, arrays: dict[str, np.ndarray]) -> tuple[str, bytes]:
    """``(record as JSON text, .npz bytes)`` of ``task``'s ``arrays``, as :func:`store`
    writes them, for a build in another process to send back without a file;
    :func:`unpacked` reads them as :func:`load_arrays` reads the files."""
    text = json.dumps(_record("", task), sort_keys=True, allow_nan=True)
    return text, _npz_bytes(arrays)


def unpacked(text: str, blob: bytes, what: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """``(record, {name: array})`` of :func:`packed`'s output; ``what`` names it in errors."""
    return json.loads(text), reading.arrays(what, None, blob)


def store_checked(
    root: str | Path, task_hash: str, task: Any, arrays: dict[str, np.ndarray]
) -> str:
    """:func:`store` ``arrays`` of ``task`` under ``root`` and return their SHA-256, the
    arrays a run is scored on; when the folder already holds arrays of ``task_hash``, they
    must be these (a sampled oracle's draws: another build may draw others). Raises
    UserError naming the stored file when they are not."""
    store(root, task_hash, task, arrays)
    npz, record = paths(root, task_hash)
    digest = hashlib.sha256(_npz_bytes(arrays)).hexdigest()
    if checksum(root, task_hash) != digest:
        raise UserError(
            f"{npz}: the stored oracle arrays of task {task_hash} are not this build's "
            "(another build drew other samples: another machine, or a build before "
            f"builds were single-threaded); a results folder holds one set per task: "
            f"delete {npz.name} and {record.name} to keep this build's, or use another folder"
        )
    return digest


def checksum(root: str | Path, task_hash: str) -> str | None:
    """The SHA-256 of the stored arrays of ``task_hash`` under ``root`` (from its record),
    or None when they are not stored: what a run records it was scored against."""
    try:
        return str(reading.json_object(paths(root, task_hash)[1])["sha256"])
    except (OSError, ValueError, KeyError):  # a BadFile is a ValueError
        return None


def _write(
    root: str | Path, name: str, arrays: dict[str, np.ndarray], entry: dict, sub: str = ""
) -> Path:
    """``<name>.npz`` of ``arrays`` then ``<name>.json`` of ``entry`` and the archive's
    sha256, each atomically, unless both are there; the ``.npz``."""
    npz, record = paths(root, name, sub)
    if record.is_file() and npz.is_file():
        return npz
    npz.parent.mkdir(parents=True, exist_ok=True)
    blob = _npz_bytes(arrays)
    write_bytes(npz, blob)  # the record last: it means whole arrays
    entry = {**entry, "sha256": hashlib.sha256(blob).hexdigest()}
    write_json(record, entry, sort_keys=True, allow_nan=True)
    return npz


def _read(
    root: str | Path, name: str, fields: tuple[str, ...] | None, again: str, sub: str = ""
) -> tuple[dict[str, Any], dict[str, np.ndarray]] | None:
    """``(entry, {field: array})`` of ``<name>`` under ``root`` (every stored array when
    ``fields`` is None), or None when its record is not there. ``again`` says what
    deleting the files does, in the errors.

    Raises:
        ValueError: naming the file, when the record cannot be read, the archive does not
            match its checksum (truncated or changed) or misses a field.
    """
    npz, record = paths(root, name, sub)
    if not record.is_file():
        return None
    try:
        entry = reading.json_object(record)
        expected = entry["sha256"]
    except reading.BadFile as err:
        raise UserError(f"{err}; delete it and {npz.name} to {again}") from None
    except (OSError, KeyError) as err:
        raise UserError(
            f"{record}: not a record of stored arrays ({type(err).__name__}: "
            f"{err}); delete it and {npz.name} to {again}"
        ) from err
    try:
        blob = npz.read_bytes()
    except OSError as err:
        raise UserError(f"{npz}: cannot be read ({err}); delete {record} to {again}") from err
    if hashlib.sha256(blob).hexdigest() != expected:
        raise UserError(
            f"{npz}: does not match the checksum in {record} (truncated or "
            f"changed?); delete both to {again}"
        )
    return entry, reading.arrays(npz, fields, blob)


def _npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """An ``.npz`` (``np.load`` reads it) whose bytes depend on the arrays only: fixed
    member timestamps, so two workers storing one task write the same file and either
    one's record matches either one's arrays."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for name, array in arrays.items():
            member = io.BytesIO()
            np.lib.format.write_array(member, np.ascontiguousarray(array), allow_pickle=False)
            archive.writestr(
                zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0)), member.getvalue()
            )
    return buffer.getvalue()


def _is_json(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def load(root: str | Path, task_hash: str) -> StoredTask | None:
    """The stored task ``task_hash`` under ``root``; None when it was never stored.

    Raises:
        ValueError: naming the file, when the record cannot be read, the arrays do not
            match its checksum (truncated or changed) or miss a field.
    """
    found = _read(root, task_hash, ARRAYS, "rebuild the task")
    if found is None:
        return None
    entry, arrays = found
    npz, record = paths(root, task_hash)
    reading.shaped(npz, arrays, SHAPES)
    batches = _read(root, task_hash, None, "store them again with a run", JOINT)
    joint = None if batches is None else JointBatches.from_arrays(batches[1])
    seed, config, meta = entry.get("seed"), entry.get("preset_config"), entry.get("meta", {})
    if not (isinstance(seed, int) and isinstance(config, dict) and isinstance(meta, dict)):
        raise UserError(
            f"{record}: expected an integer 'seed' and mappings 'preset_config' and 'meta'; "
            f"delete it and {npz.name} to rebuild the task"
        )
    return StoredTask(config, seed, meta=meta, joint=joint, **arrays)


def load_arrays(
    root: str | Path, task_hash: str
) -> tuple[dict[str, Any], dict[str, np.ndarray]] | None:
    """``(record, {name: array})``, every array stored for ``task_hash`` under ``root`` (a
    task of any kind), or None when none is stored; errors as :func:`load`."""
    return _read(root, task_hash, None, "rebuild the task")


def results_root(run_dir: str | Path) -> Path:
    """The results folder of a run folder ``<root>/<preset>/<method>/<hash>/seed-<s>``."""
    return Path(run_dir).parents[3]


def fit_part_key(task_hash: str, fit_idx: np.ndarray) -> str:
    """The file name (no suffix) of the posterior given the training points ``fit_idx`` (m,)
    of task ``task_hash``: the task hash and the first 16 hex digits of the sha256 of the
    positions as int64."""
    digest = hashlib.sha256(np.ascontiguousarray(fit_idx, np.int64).tobytes()).hexdigest()
    return f"{task_hash}-fit-{digest[:16]}"


def store_posterior(
    root: str | Path, key: str, post_mean: np.ndarray, post_var: np.ndarray
) -> Path:
    """Write a fit part's posterior (N,) each under ``root`` unless a whole copy is there."""
    arrays = {
        "post_mean": np.asarray(post_mean, np.float64),
        "post_var": np.asarray(post_var, np.float64),
    }
    return _write(root, key, arrays, {"key": key})


def load_posterior(root: str | Path, key: str) -> tuple[np.ndarray, np.ndarray] | None:
    """``(post_mean, post_var)`` stored under ``root`` as ``key``; None when never stored.

    Raises:
        ValueError: naming the file, when it does not match its record's checksum.
    """
    found = _read(root, key, ("post_mean", "post_var"), "compute it again")
    return None if found is None else (found[1]["post_mean"], found[1]["post_var"])
