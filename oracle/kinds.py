"""Task kinds at the oracle layer: each kind's preset schema and task builder.

A *task kind* (regression today) is what a preset says it is (``kind:``, default
``regression``). Each layer keeps its own part of a kind under the kind's name: here the
preset schema (a pydantic model whose ``kind`` field is the literal name, so the
schemas form a discriminated union) and the builder ``build(preset, seed, *, data_dir)``;
``udora.methods`` keeps the kind's prediction type, ``udora.scoring`` its metrics, and
``udora.experiments.tasks.kinds`` puts the parts together (docs/design.md, "Task kinds").

A kind whose build is expensive (a sampled posterior) sets ``cache_on_disk``; the runner
then keeps its tasks on disk by task hash and ``version`` (bump it when the builder's
output changes), and the task type supplies ``to_arrays``/``from_arrays``.

The built-in kinds register where their schemas are defined (regression in
:mod:`udora.oracle.preset`, which the package ``udora.oracle`` imports first).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REGRESSION = "regression"
DEFAULT_KIND = REGRESSION  # a preset without ``kind:`` (every preset written before kinds)


@dataclass(frozen=True)
class TaskKind:
    """The oracle-side part of a task kind.

    Args:
        name: the kind's name, the value of a preset's ``kind`` field.
        preset: the kind's preset schema (a frozen pydantic model with ``kind``, ``name``
            and ``suite`` fields; unknown keys are errors).
        build: ``build(preset, seed, *, data_dir=None) -> task``; the task has the
            preset, the seed, the pool ``X`` (N, d), ``train_idx`` (n,) and ``y_train``
            (n,), and ``knowledge(with_prior=...)`` for the method.
        suites: the suites of the kind's shipped presets.
        version: the builder's version, part of a disk-cached task's key.
        cache_on_disk: keep built tasks on disk by task hash (an expensive build); the
            task then has ``to_arrays() -> {name: array}`` and ``load`` restores it.
        single_threaded: (with ``cache_on_disk``) the build's output follows how its
            floating-point sums are split over threads (a sampled posterior's chains
            amplify every rounding): the runner builds it in a process of its own on
            one core with one thread (:mod:`udora.experiments.run.processes`), so the same
            task gives the same arrays whoever asks.
        load: ``load(preset, seed, arrays, meta) -> task``, the task whose
            ``to_arrays()`` gave ``arrays`` (and whose JSON-able ``meta`` was kept).
        shapes: the arrays an ``oracle build`` folder holds (the task's ``to_arrays()``),
            ``{name: "N d"}`` as :func:`udora.oracle.reading.shaped` checks them.
        summary: ``summary(arrays, info) -> {field: value}``, what ``oracle show`` prints
            of such a folder (``info``: its ``oracle.json``).
        build_sample: ``build_sample(preset, seed, *, data_dir=None) -> sample``, the
            task's pool ``X``, ``train_idx``, ``y_train`` and ``knowledge(...)`` without
            its oracle (what tuning fits on), for a kind whose oracle is expensive; None:
            tuning builds the whole task.
    """

    name: str
    preset: type
    build: Callable[..., Any]
    suites: tuple[str, ...] = ()
    version: int = 1
    cache_on_disk: bool = False
    single_threaded: bool = False
    load: Callable[..., Any] | None = None
    shapes: dict[str, str] | None = None
    summary: Callable[[dict, dict], dict[str, Any]] | None = None
    build_sample: Callable[..., Any] | None = None

    def __post_init__(self) -> None:
        if self.cache_on_disk and self.load is None:
            raise ValueError(f"task kind {self.name!r}: cache_on_disk needs a load function")
        if self.single_threaded and not self.cache_on_disk:
            raise ValueError(f"task kind {self.name!r}: single_threaded needs cache_on_disk")


_KINDS: dict[str, TaskKind] = {}


def register_kind(kind: TaskKind) -> TaskKind:
    """Add ``kind``; a second kind of the same name is an error unless it is the same."""
    known = _KINDS.get(kind.name)
    if known is not None and known != kind:
        raise ValueError(f"task kind {kind.name!r} is already registered")
    _KINDS[kind.name] = kind
    return kind


def unregister_kind(name: str) -> None:
    """Drop a kind (tests that register a kind of their own)."""
    _KINDS.pop(name, None)


def get_kind(name: str) -> TaskKind:
    """The kind called ``name``; an unknown name raises ValueError listing the known."""
    try:
        return _KINDS[name]
    except (KeyError, TypeError):
        known = ", ".join(sorted(_KINDS))
        raise ValueError(f"unknown task kind {name!r}; known kinds: {known}") from None


def kind_names() -> tuple[str, ...]:
    """The registered kinds, regression first."""
    return tuple(sorted(_KINDS, key=lambda k: (k != REGRESSION, k)))


def build(preset: Any, seed: int, *, data_dir: str | Path | None = None) -> Any:
    """The task of ``preset`` at ``seed``, built by its kind's builder."""
    return get_kind(preset.kind).build(preset, seed, data_dir=data_dir)
