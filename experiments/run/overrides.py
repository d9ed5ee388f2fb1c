"""What ``--set key=value`` means for a run: parsing, method fields apart from
``preset.X`` fields and the run's own ``method_seed``, and scoping ``method.key`` to one
method of a grid (docs/running.md, "One run")."""

from __future__ import annotations

from typing import Any

import yaml

from udora import methods
from udora.errors import UserError
from udora.experiments.run.checks import UsageError

PRESET_PREFIX = "preset."
METHOD_SEED = "method_seed"  # a run field set through --set, not a method or preset field


def parse_set(pairs: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """``["width=64", "preset.n_train=300"]`` -> dict; values parsed as YAML scalars/lists."""
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UserError(f"--set: expected key=value, got {pair!r}")
        out[key.strip()] = yaml.safe_load(value)
    return out


def split_overrides(overrides: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(method overrides, preset overrides): keys ``preset.X`` go to the preset;
    :data:`METHOD_SEED` goes to neither (:func:`method_seed` reads it)."""
    method = {
        k: v for k, v in overrides.items() if not k.startswith(PRESET_PREFIX) and k != METHOD_SEED
    }
    preset = {
        k[len(PRESET_PREFIX) :]: v for k, v in overrides.items() if k.startswith(PRESET_PREFIX)
    }
    return method, preset


def method_seed(overrides: dict[str, Any]) -> int | None:
    """The ``method_seed`` override: the seed the method's own randomness (initialisation,
    bootstrap draws, minibatches) derives from, apart from the task seed that draws the
    data; None when not given (the method then uses the task seed, as every run did
    before it existed). Raises UsageError unless it is a non-negative integer."""
    if METHOD_SEED not in overrides:
        return None
    value = overrides[METHOD_SEED]
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(f"--set {METHOD_SEED}={value!r}: expected a non-negative integer")
    return int(value)


def scoped_overrides(
    overrides: dict[str, Any], method: str, method_names: list[str]
) -> dict[str, Any]:
    """The overrides of ``method`` in a grid of ``method_names``.

    ``width=64`` applies to every method; ``nn_ensemble.width=64`` to ``nn_ensemble`` only
    (a registered method's name before the dot); ``preset.n_train`` stays a preset field.
    A scoped key whose method is not in the grid raises UsageError naming it.
    """
    known = set(methods.list_methods())
    out = {}
    for key, value in overrides.items():
        head, dot, field = key.partition(".")
        if not dot or head not in known:
            out[key] = value
        elif head not in method_names:
            raise UsageError(
                f"--set {key}: {head} is not among the grid's methods ({', '.join(method_names)})"
            )
        elif head == method:
            out[field] = value
    return out
