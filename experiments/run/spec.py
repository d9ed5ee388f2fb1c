"""What a run is, resolved once: :class:`RunSpec` (as given) -> :class:`ResolvedRun` (frozen).

A run's identity is what reaches the task and the method, nothing else (docs/running.md):
the preset fields :func:`udora.oracle.task.build_task` reads (:data:`TASK_FIELDS`) and the
method's class name with its full resolved config. The preset's ``name`` (already the top
folder), ``suite``, ``paper`` and the ``fit`` record (wall seconds and backend of the
kernel fit) are left out, so refitting a preset elsewhere to the same hyperparameters
keeps its run folders. The seed is the ``seed-<s>`` folder, not part of the hash.

The table the task is built from is part of the identity too: the kind and SHA-256 of its
:class:`udora.oracle.data.DataSource` (a data-directory file and a package copy of the
same dataset differ in rounding, so they hash differently). It is looked up once per
(preset source, data directory) and cached; a table found nowhere, or a package table
that cannot be used, hashes as ``None`` and the run then fails with the loader's message.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from udora import methods
from udora.errors import UserError
from udora.experiments.run.checks import UsageError
from udora.experiments.run.overrides import Overrides
from udora.names import inside
from udora.oracle.kinds import REGRESSION
from udora.oracle.preset import Preset, load_preset

_SOURCES: dict[tuple[str, str | None], dict[str, str]] = {}  # (source key, dir) -> record

HASH_DIGITS = 10
TASK_FIELDS = (
    "source",
    "features",
    "target",
    "pool_size",
    "pool_seed",
    "n_train",
    "kernel",
    "mean",
    "noise",
    "shift",
)


def scope_hint(method: str, mine: Overrides, method_names: list[str]) -> str:
    """For a grid-wide --set key that ``method`` lacks: which methods have it, and how to
    set it for them only (empty when no other method of the grid has it)."""
    fields = methods.get_method_class(method).Config.model_fields
    hints = []
    for key in (k for k in mine.method if k not in fields and "." not in k):
        owners = [
            m
            for m in method_names
            if m != method and key in methods.get_method_class(m).Config.model_fields
        ]
        if owners:
            scoped = " ".join(f"--set {m}.{key}=..." for m in owners)
            hints.append(f"{key} is a field of {', '.join(owners)} only: use {scoped}")
    return "; " + "; ".join(hints) if hints else ""


@dataclass(frozen=True)
class RunSpec:
    """A run as the user gave it: preset name or path, method name, seed, overrides.

    ``overrides`` may be given as flat ``--set`` keys (``{"width": 64, "preset.n_train":
    300}``); they are read into :class:`~udora.experiments.run.overrides.Overrides` here,
    once, and a ``<method>.<field>`` key of this run's method becomes a method field.
    """

    preset: str
    method: str
    seed: int
    overrides: Overrides = field(default_factory=Overrides)

    def __post_init__(self) -> None:
        given = Overrides.of(self.overrides)
        object.__setattr__(self, "overrides", given.for_method(self.method, [self.method]))


@dataclass(frozen=True)
class ResolvedRun:
    """A run resolved once: derived preset, validated config, identity and folder.

    Built by :func:`resolve`; every later step (skip check, worker, result.json, W&B)
    reads it instead of re-reading the preset YAML. Picklable (spawned workers get it).
    """

    preset_arg: str  # the preset name or YAML path as given
    preset: Preset  # the derived preset (``preset.X`` overrides applied)
    method: str
    config: Any  # the method's validated MethodConfig
    seed: int
    overrides: Overrides  # the user's overrides: method fields, preset fields, method_seed
    label: str  # "default" or the overrides as "k=v,k=v" (sorted)
    identity: dict[str, Any]  # exactly what was hashed
    config_hash: str
    rel_dir: Path  # <preset>/<method>/<hash>/seed-<s>, relative to the results root
    data_source: dict[str, str] | None = None  # the table's DataSource record, or None

    @property
    def method_seed(self) -> int | None:
        """The ``method_seed`` override; None: the method uses the task seed."""
        return self.overrides.method_seed

    @property
    def fit_seed(self) -> int:
        """The seed handed to the method's ``fit``: ``method_seed`` or the task seed."""
        return self.seed if self.method_seed is None else self.method_seed

    def check_data_source(self, data_dir: str | Path | None = None) -> dict[str, str]:
        """The table's source record under ``data_dir``; it must be the one hashed.

        Raises:
            ValueError: a given data directory does not exist, or the table found now
                (kind or checksum) is not the one this run was resolved with.
            DataNotFoundError: the table is found nowhere.
        """
        found = data_source_record(self.preset, data_dir, missing_ok=False)
        if self.identity["task"].get("data_source") != _hashed_part(found):
            raise UserError(
                f"{self.rel_dir}: resolved with data source {self.data_source}, but the "
                f"data found now is {found}; resolve the run again with the same data_dir"
            )
        return found

    @property
    def task_hash(self) -> str:
        """The task's identity hash (:func:`task_hash`): the same for every method and
        config run on this task."""
        return task_hash(self.identity, self.seed)

    def run_dir(self, out_dir: str | Path) -> Path:
        """The run's folder under the results root ``out_dir``; a
        :class:`~udora.errors.UserError` when it resolves outside ``out_dir`` (a symbolic
        link planted there: :func:`udora.names.inside`)."""
        path = Path(out_dir) / self.rel_dir
        inside(out_dir, path)
        return path

    @property
    def method_class(self) -> Any:
        """The method's registered class (:mod:`udora.methods.registry`)."""
        return methods.get_method_class(self.method)

    def make_method(self) -> Any:
        """A fresh, unfitted method instance with the resolved config."""
        return self.method_class(self.config)


def task_identity(preset: Preset) -> dict[str, Any]:
    """The preset fields that reach the task (:data:`TASK_FIELDS`), as JSON values; the
    ground-truth family (``truth``) only when it is not the default GP, so every task of
    the GP family keeps the hash it had before families existed, and the acquired points
    only when there are some."""
    if preset.kind != REGRESSION:  # another kind: its schema says what reaches the task
        fields = preset.model_dump(mode="json", include=set(type(preset).TASK_FIELDS))
        return {**fields, "kind": preset.kind}
    fields = preset.model_dump(mode="json", include=set(TASK_FIELDS))
    if preset.truth.family != "gp":
        fields["truth"] = preset.truth.model_dump(mode="json")
    if preset.acquired:  # an active-learning round: its task covers the acquired points
        fields["acquired"] = list(preset.acquired)
    return fields


def task_part(preset: Preset, data_source: dict[str, str] | None) -> dict[str, Any]:
    """The ``task`` part of a run's identity: :func:`task_identity` and the data source's
    kind and checksum (what :func:`task_hash` covers, with the seed)."""
    return {**task_identity(preset), "data_source": _hashed_part(data_source)}


def _source_key(preset: Preset) -> str:
    return preset.model_dump_json(include={"name", "source", "features", "target"})


def data_source_record(
    preset: Preset, data_dir: str | Path | None = None, *, missing_ok: bool = True
) -> dict[str, str] | None:
    """The :class:`~udora.oracle.data.DataSource` of ``preset``'s table as a dict, or None.

    ``data_dir`` defaults to ``UDORA_DATA_DIR``. When no source has the table, or the
    package or OpenML table loaded to checksum it cannot be used: None if ``missing_ok``
    (the run then fails with the loader's message), else the loader's error. Cached per
    (preset source, data dir): a package table is loaded to checksum it (~1 s), a file is
    only hashed.

    Raises:
        ValueError: a given data directory does not exist.
        DataNotFoundError: the table is found nowhere and not ``missing_ok``.
        TableError: the table loaded cannot be used and not ``missing_ok``.
    """
    from udora.oracle.data import DataNotFoundError, data_dir_from_env, table_source
    from udora.oracle.reading import BadFile
    from udora.oracle.table import TableError

    folder = data_dir_from_env(data_dir)
    key = (_source_key(preset), None if folder is None else str(folder.resolve()))
    if key in _SOURCES:
        return _SOURCES[key]
    try:
        record = table_source(preset, folder).to_dict()
    except (DataNotFoundError, TableError, BadFile):
        if not missing_ok:
            raise
        return None
    _SOURCES[key] = record
    return record


def _hashed_part(record: dict[str, str] | None) -> dict[str, str] | None:
    """What of a source record the identity covers: kind and checksum, not the path."""
    return None if record is None else {"kind": record["kind"], "sha256": record["sha256"]}


def run_identity(
    preset: Preset, method_cls: type, config: Any, data_source: dict[str, str] | None = None
) -> dict[str, Any]:
    """The dict a run's hash covers: task fields and data source, method class and config,
    and the trainer's version for methods that declare one (``trainer_version``, the
    neural-network methods: :data:`udora.methods.nn.trainer.TRAINER_VERSION`), so runs
    trained by an earlier trainer are never reused."""
    method: dict[str, Any] = {"class": method_cls.__name__, "config": config.to_dict()}
    version = getattr(method_cls, "trainer_version", None)
    if version is not None:
        method["trainer"] = int(version)
    return {"task": task_part(preset, data_source), "method": method}


def identity_hash(identity: dict[str, Any]) -> str:
    """:data:`HASH_DIGITS` hex digits of the SHA-256 of the canonical JSON of ``identity``."""
    blob = json.dumps(identity, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(blob.encode()).hexdigest()[:HASH_DIGITS]


def task_hash(identity: dict[str, Any], seed: int) -> str:
    """The one identity of a task (docs/running.md, "What a finished run is"): the hash of
    the preset fields that build it, its data source (kind and checksum) and the seed, i.e.
    the ``task`` part of a run's ``identity`` plus the seed. Two runs share a task hash
    exactly when their methods saw the same training data and pool and are scored against
    the same oracle arrays; the ground-truth family enters it when it is not the GP
    (:func:`task_identity`)."""
    return identity_hash({"task": identity["task"], "seed": int(seed)})


def config_label(overrides: Overrides | Mapping[str, Any]) -> str:
    """A short human label of a run's overrides: ``default`` or ``k=v,k=v`` sorted by the
    user's keys (``preset.n_train=300,width=64``; :meth:`Overrides.flat`)."""
    flat = Overrides.of(overrides).flat()
    if not flat:
        return "default"
    return ",".join(
        f"{k}={json.dumps(v, default=str, separators=(',', ':'))}" for k, v in sorted(flat.items())
    )


def refuse_unsupported(method: str, cls: type, preset: Any) -> None:
    """Raise UsageError naming the method, the preset's kind and the method's stated
    reason when the method class ``cls`` does not declare the kind of ``preset``."""
    supported = getattr(cls, "kinds", (REGRESSION,))
    if preset.kind not in supported:
        why = dict(getattr(cls, "not_for", ())).get(preset.kind)
        raise UsageError(
            f"method {method} does not support {preset.kind} tasks (preset "
            f"{preset.name} is {preset.kind}); it supports: {', '.join(supported)}"
            + (f" ({why})" if why else "")
        )


def resolve(spec: RunSpec, data_dir: str | Path | None = None) -> ResolvedRun:
    """Load and derive the preset, validate the method config, hash; raises on bad input.

    ``data_dir`` (default ``UDORA_DATA_DIR``) locates the table whose source is hashed.
    """
    over = spec.overrides
    preset = load_preset(spec.preset)
    if over.task:
        preset = preset.with_overrides(dict(over.task), origin="--set preset")
    model = methods.get_method(spec.method, **over.method)
    refuse_unsupported(spec.method, type(model), preset)
    source = data_source_record(preset, data_dir)
    identity = run_identity(preset, type(model), model.config, source)
    if over.method_seed is not None:  # only then: every run without it keeps its hash
        identity["method"]["seed"] = over.method_seed
    digest = identity_hash(identity)
    return ResolvedRun(
        preset_arg=str(spec.preset),
        preset=preset,
        method=spec.method,
        config=model.config,
        seed=int(spec.seed),
        overrides=over,
        label=config_label(over),
        identity=identity,
        config_hash=digest,
        rel_dir=Path(preset.name) / spec.method / digest / f"seed-{int(spec.seed)}",
        data_source=source,
    )


def tuned_source(found: dict[str, Any]) -> dict[str, Any]:
    """What ``bench --tuned`` records as a run's ``config_source``, from a tuned file's
    contents ``found`` (with its ``path`` and ``hash``): the keys it set and its tuning
    protocol (None for a method with nothing to tune, whose run is the default config)."""
    return {
        "path": found["path"],
        "hash": found["hash"],
        "keys": sorted(found.get("config") or {}),
        "tuned": bool(found.get("tuned")),
        "protocol": found.get("protocol"),
        **({"preset_fields": fields} if (fields := tuned_preset_fields(found)) else {}),
    }


def tuned_preset_fields(found: dict[str, Any]) -> dict[str, Any]:
    """The preset fields a tuned file's trials held (``{"truth": "warped"}``): its
    protocol's ``preset``, or ``preset_fields`` for a method with nothing to tune."""
    return dict((found.get("protocol") or {}).get("preset") or found.get("preset_fields") or {})
