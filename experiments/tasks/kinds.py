"""A task kind as a run uses it: each layer's part, found by the kind's name.

What a kind supplies (docs/design.md, "Task kinds"):

- its preset schema and task builder (:mod:`udora.oracle.kinds`);
- its prediction type (:mod:`udora.methods.prediction`), which validates what is stored;
- its metrics (:mod:`udora.scoring.registry`) and the scorer that computes them, with
  the curves behind them (:class:`RunKind`, here);
- the arrays a results folder keeps of a task (``task_arrays``);
- its report section (:func:`udora.experiments.report.sections.register_section`).

Regression's run part is registered below; a new kind registers its own
(:func:`register_run_kind`) in the module that defines it, editing no regression file.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from udora.methods.prediction import prediction_type
from udora.oracle.files import ARRAYS
from udora.oracle.kinds import REGRESSION, TaskKind, get_kind


@dataclass(frozen=True)
class RunKind:
    """The run's part of a task kind.

    Args:
        name: the kind's name (a preset's ``kind``).
        score: ``score(task, prediction) -> {metric: float}``, the kind's metrics of a
            stored prediction against the task's oracle and realised outcomes.
        curves: ``curves(task, prediction) -> {name: array}``, the arrays behind them
            (summarised into result.json); None when the kind has none.
        task_arrays: ``task_arrays(task) -> {name: array}``, what the results folder
            keeps of a task for later analyses (``oracle/<task_hash>.npz``); a target
            array ``t`` whose values are estimates (a sampled oracle) keeps its Monte
            Carlo standard errors beside it as ``t_se``.
        standard_errors: ``standard_errors(task, prediction) -> {metric: float}``, the
            Monte Carlo standard errors of the metrics whose targets are estimates,
            recorded beside them (``metrics_se`` in result.json, ``se.<metric>`` columns
            of the results table); None for a kind with exact targets (regression).
    """

    name: str
    score: Callable[[Any, Any], dict[str, float]]
    curves: Callable[[Any, Any], dict[str, np.ndarray]] | None
    task_arrays: Callable[[Any], dict[str, np.ndarray]]
    standard_errors: Callable[[Any, Any], dict[str, float]] | None = None

    @property
    def task(self) -> TaskKind:
        """The oracle's part: preset schema and builder."""
        return get_kind(self.name)

    @property
    def prediction(self) -> type:
        """The kind's prediction type."""
        return prediction_type(self.name)


_KINDS: dict[str, RunKind] = {}
# The built-in kinds besides regression register their run parts in their own modules,
# imported by name on first use (like the built-in methods: no import edge back to here).
BUILTIN_RUN_KINDS = {"classification": "udora.experiments.tasks.classification"}


def _load_builtins() -> None:
    for name, module in BUILTIN_RUN_KINDS.items():
        if name not in _KINDS:
            importlib.import_module(module)


def register_run_kind(kind: RunKind) -> RunKind:
    """Add ``kind``'s run part; its oracle part and prediction type must exist already."""
    get_kind(kind.name)
    prediction_type(kind.name)
    known = _KINDS.get(kind.name)
    if known is not None and known != kind:
        raise ValueError(f"task kind {kind.name!r} already has a run part")
    _KINDS[kind.name] = kind
    return kind


def unregister_run_kind(name: str) -> None:
    """Drop a kind's run part (tests that register a kind of their own)."""
    if name != REGRESSION:
        _KINDS.pop(name, None)


def run_kind(name: str) -> RunKind:
    """The run part of task kind ``name``; an unknown kind lists the known ones."""
    _load_builtins()
    try:
        return _KINDS[name]
    except KeyError:
        known = ", ".join(sorted(_KINDS))
        raise ValueError(f"task kind {name!r} has no run part; known: {known}") from None


def run_kind_names() -> tuple[str, ...]:
    """Kinds with a run part, regression first."""
    _load_builtins()
    return tuple(sorted(_KINDS, key=lambda k: (k != REGRESSION, k)))


def _regression_score(task: Any, prediction: Any) -> dict[str, float]:
    from udora.scoring import score

    return score(task, prediction)


def _regression_curves(task: Any, prediction: Any) -> dict[str, np.ndarray]:
    from udora.scoring import curves

    return curves(task, prediction)


def _regression_arrays(task: Any) -> dict[str, np.ndarray]:
    return {name: np.asarray(getattr(task, name)) for name in ARRAYS}


register_run_kind(RunKind(REGRESSION, _regression_score, _regression_curves, _regression_arrays))
