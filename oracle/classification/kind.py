"""The classification task kind, registered under ``classification``
(:mod:`udora.oracle.kinds`): the :class:`~.preset.ClassificationPreset` schema, the
builder :func:`~.task.build_task` (imported when a task is built: it needs JAX) and
:func:`~.task.build_sample` (the training sample alone, for tuning), tasks
kept on disk by task hash (a sampled posterior takes minutes), the arrays an
``oracle build`` folder holds and what ``oracle show`` prints of it. The package
``udora.oracle`` imports this module, so the kind is known wherever a preset is read."""

from __future__ import annotations

from typing import Any

from udora.oracle.classification.preset import CLASSIFICATION, SUITES, ClassificationPreset
from udora.oracle.kinds import TaskKind, register_kind


def _build(preset: ClassificationPreset, seed: int, *, data_dir: Any = None) -> Any:
    from udora.oracle.classification.task import build_task  # JAX: when a task is built

    return build_task(preset, seed, data_dir=data_dir)


def _build_sample(preset: ClassificationPreset, seed: int, *, data_dir: Any = None) -> Any:
    from udora.oracle.classification.task import build_sample

    return build_sample(preset, seed, data_dir=data_dir)


def _load(preset: ClassificationPreset, seed: int, arrays: dict, meta: dict) -> Any:
    from udora.oracle.classification.task import ClassificationTask

    return ClassificationTask.from_arrays(preset, seed, arrays, meta)


def _summary(arrays: dict, info: dict) -> dict[str, Any]:
    from udora.oracle.classification.targets import summary

    return summary(arrays, info)


def _shapes() -> dict[str, str]:
    from udora.oracle.classification.targets import SHAPES

    return SHAPES


KIND = register_kind(
    TaskKind(
        CLASSIFICATION,
        ClassificationPreset,
        _build,
        suites=SUITES,
        version=2,  # 2: built single-threaded (a cache of version 1 may hold other draws)
        cache_on_disk=True,
        single_threaded=True,  # its chains amplify every rounding: one thread, always
        load=_load,
        shapes=_shapes(),
        summary=_summary,
        build_sample=_build_sample,
    )
)
