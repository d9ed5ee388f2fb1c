"""The regression task kind: the :class:`~udora.oracle.preset.Preset` schema and
:func:`~udora.oracle.task.build_task`, registered under ``regression``
(:mod:`udora.oracle.kinds`). The package ``udora.oracle`` imports this module first, so
the kind is known wherever a preset is read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from udora.oracle.kinds import REGRESSION, TaskKind, register_kind
from udora.oracle.preset import SUITES, Preset


def _build(preset: Preset, seed: int, *, data_dir: str | Path | None = None) -> Any:
    from udora.oracle.task import build_task  # JAX: imported when a task is built

    return build_task(preset, seed, data_dir=data_dir)


KIND = register_kind(TaskKind(REGRESSION, Preset, _build, suites=SUITES))
