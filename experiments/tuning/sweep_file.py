"""W&B sweep configurations for tuning: written by ``udora sweep init``, validated on load.

:func:`sweep_config` writes a standard W&B sweep (``method``, ``metric``, ``parameters``
from the method's ``Config.search_space()`` plus the fixed ``preset``, ``method``,
``seed``, ``objective``, ``tuning_val_fraction`` entries, ``run_cap``, ``command``); each
proposal runs ``udora sweep trial key=value ...`` (:func:`parse_trial_args`), which is
:func:`udora.experiments.tuning.protocol.trial`. :func:`load_sweep_config` validates such a file and
names the key of anything wrong.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from udora.errors import UserError
from udora.experiments.tuning.protocol import (
    OBJECTIVES,
    VAL_FRACTION,
    SweepConfigError,
    check_objective,
    check_val_fraction,
)
from udora.methods.base import ConfigError, make_config
from udora.oracle import reading
from udora.oracle.atomic import write_text

if TYPE_CHECKING:
    from udora.experiments.run.overrides import Overrides

SEARCHES = ("bayes", "random", "grid")
FIXED = ("preset", "method", "seed", "objective", "tuning_val_fraction")  # non-method keys
COMMAND = ["${env}", "udora", "sweep", "trial", "${args_no_hyphens}"]
_W_B_ONLY_KEYS = ("run_cap",)  # documented W&B keys the ``sweeps`` 0.2 schema lacks


def sweep_config(
    preset: str,
    method: str,
    *,
    objective: str = "nll",
    search: str = "bayes",
    trials: int = 20,
    seed: int = 0,
    val_fraction: float = VAL_FRACTION,
    fixed: Overrides | dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A W&B sweep configuration for tuning ``method`` on ``preset`` (see module doc).

    ``fixed`` (:class:`~udora.experiments.run.overrides.Overrides`, or flat ``--set``
    keys): its method fields (``{"optimizer": "sgd"}``) are single-value parameters, its
    preset fields single-value ``preset.X`` parameters (the task every trial is drawn
    from), and the
    space searched is that of the config with them set (the NN methods' optimizer-specific
    ranges follow ``optimizer``); a fixed field is never also searched.

    Grid search needs finite values: a parameter with a continuous distribution
    (``uniform``, ``log_uniform_values``, ...) is an error naming it; ``int_uniform``
    ranges are kept (the grid enumerates every integer).

    Raises:
        SweepConfigError, ValueError, KeyError: unknown preset, method, objective or
            search, a bad trial count, seed or fraction.
    """
    from udora import methods
    from udora.oracle.preset import load_preset

    check_objective(objective)
    if search not in SEARCHES:
        raise SweepConfigError(f"unknown search {search!r}; valid: {', '.join(SEARCHES)}")
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise SweepConfigError(f"--trials: expected a positive integer, got {trials!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise SweepConfigError(f"--seed: expected a non-negative integer, got {seed!r}")
    check_val_fraction(val_fraction)
    from udora.experiments.run.overrides import PRESET_PREFIX, Overrides
    from udora.experiments.run.spec import refuse_unsupported

    base_preset = load_preset(preset)  # an unknown preset raises, naming the valid ones
    cls = methods.get_method_class(method)
    check_objective(objective, base_preset.kind)
    try:
        refuse_unsupported(method, cls, base_preset)
    except UserError as err:
        raise SweepConfigError(str(err)) from None
    given = Overrides.of(fixed)
    held, preset_held = dict(given.method), dict(given.task)
    _check_preset_fields(base_preset, preset_held, "--set preset")
    try:
        base = make_config(cls.Config, held)
    except ConfigError as err:
        raise SweepConfigError(f"--set: {err}") from None
    space = {k: v for k, v in base.search_space_on(base_preset.kind).items() if k not in held}
    clash = sorted((set(space) | set(held)) & set(FIXED))
    if clash:
        raise SweepConfigError(f"{method}: search-space keys {clash} clash with sweep keys")
    if search == "grid":
        continuous = [k for k, v in space.items() if not _grid_ready(v)]
        if continuous:
            raise SweepConfigError(
                f"grid search needs finite values, but {method}'s {continuous} are continuous; "
                "use --search random or bayes"
            )
    sweep = {
        "preset": preset,
        "method": method,
        "seed": seed,
        "objective": objective,
        "tuning_val_fraction": val_fraction,
    }
    return {
        "name": f"{preset}-{method}-{objective}",
        "method": search,
        "metric": {"name": OBJECTIVES[objective], "goal": "minimize"},
        "parameters": {
            **{k: {"value": v} for k, v in {**sweep, **held}.items()},
            **{f"{PRESET_PREFIX}{k}": {"value": v} for k, v in preset_held.items()},
            **space,
        },
        "run_cap": trials,
        "command": list(COMMAND),
    }


def _check_preset_fields(preset: Any, fields: dict[str, Any], where: str) -> None:
    """A held preset field (``preset.truth: warped``: the task every trial is drawn from)
    must be one the preset accepts; raises SweepConfigError naming it."""
    if not fields:
        return
    try:
        preset.with_overrides(fields, origin=where)
    except (ValueError, KeyError, TypeError) as err:
        raise SweepConfigError(" ".join(str(err).split())) from None


def preset_fields(params: dict[str, Any]) -> dict[str, Any]:
    """The held preset fields of a sweep's ``parameters`` (``{"truth": "warped"}``)."""
    from udora.experiments.run.overrides import PRESET_PREFIX

    return {
        k[len(PRESET_PREFIX) :]: spec.get("value")
        for k, spec in params.items()
        if k.startswith(PRESET_PREFIX) and isinstance(spec, dict)
    }


def _grid_ready(spec: dict[str, Any]) -> bool:
    if "value" in spec or ("values" in spec and "probabilities" not in spec):
        return True
    return spec.get("distribution") in ("int_uniform", "q_uniform")


def write_sweep_config(config: dict[str, Any], out: str | Path) -> Path:
    """Write ``config`` as YAML to ``out`` (must end in .yaml/.yml; its folder must exist)."""
    out = Path(out)
    if out.suffix not in (".yaml", ".yml"):
        raise SweepConfigError(f"--out: {out} must be a .yaml or .yml file")
    if out.is_dir():
        raise SweepConfigError(f"--out: {out} is a folder, expected a .yaml file")
    if not out.parent.is_dir():
        raise SweepConfigError(f"--out: folder {out.parent} does not exist")
    try:
        write_text(out, yaml.safe_dump(config, sort_keys=False))
    except OSError as err:
        raise SweepConfigError(f"--out: cannot write {out}: {err.strerror}") from None
    return out


def load_sweep_config(path: str | Path) -> dict[str, Any]:
    """Read and validate a sweep YAML written by ``udora sweep init`` (or edited by hand).

    Checks the W&B schema (via the ``sweeps`` package), the fixed entries (``preset``,
    ``method``, ``objective``, ``seed``, ``tuning_val_fraction``), that every other parameter
    is a field of the method's config and that its values, ``min`` and ``max`` are
    accepted by that field.

    Raises:
        SweepConfigError: the file is missing or not valid YAML (names the file); an
            unknown parameter (names it and the valid fields); a value the field
            rejects (names the key); a schema violation.
    """
    from udora import methods
    from udora.methods.base import ConfigError, make_config

    path = Path(path)
    try:
        config = reading.yaml_value(path)
    except OSError as err:
        raise SweepConfigError(f"{path}: cannot read the sweep file: {err.strerror}") from None
    except reading.BadFile as err:
        raise SweepConfigError(str(err)) from None
    if not isinstance(config, dict) or not isinstance(config.get("parameters"), dict):
        raise SweepConfigError(f"{path}: expected a mapping with a 'parameters' mapping")
    _check_schema(path, config)
    params = config["parameters"]
    fixed = {}
    for key in ("preset", "method"):
        if not isinstance(params.get(key), dict) or "value" not in params[key]:
            raise SweepConfigError(f"{path}: parameters.{key} must be a fixed {{value: ...}}")
        fixed[key] = params[key]["value"]
    cls = methods.get_method_class(fixed["method"])
    from udora.experiments.run.overrides import PRESET_PREFIX
    from udora.oracle.preset import load_preset

    for key in params:
        if key.startswith(PRESET_PREFIX) and not (
            isinstance(params[key], dict) and "value" in params[key]
        ):
            raise SweepConfigError(
                f"{path}: parameters.{key} must be a fixed {{value: ...}} "
                "(a preset field is held, never searched)"
            )
    held_preset = preset_fields(params)
    kind = load_preset(fixed["preset"]).kind
    _check_preset_fields(load_preset(fixed["preset"]), held_preset, f"{path}: parameters.preset")
    for key, check in (
        ("objective", lambda value: check_objective(value, kind)),
        ("tuning_val_fraction", check_val_fraction),
    ):
        if key in params:
            for value in _values(params[key]):
                check(value)
    for value in _values(params.get("seed", {})):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise SweepConfigError(
                f"{path}: parameters.seed: expected integers >= 0, got {value!r}"
            )
    valid = ", ".join(cls.Config.field_names())
    for key, spec in params.items():
        if key in FIXED or key.startswith(PRESET_PREFIX):
            continue
        if key not in cls.Config.model_fields:
            raise SweepConfigError(
                f"{path}: parameter {key!r} is not a field of {fixed['method']}; valid fields: "
                f"{valid}"
            )
        for value in _values(spec):
            try:
                make_config(cls.Config, {key: value})
            except ConfigError as err:
                reason = str(err).split("; valid fields")[0]
                raise SweepConfigError(
                    f"{path}: parameter {key!r}: value {value!r}: {reason}"
                ) from None
    return config


def _values(spec: Any) -> list[Any]:
    """The concrete values a parameter spec can take at its ends: value, values, min, max."""
    if not isinstance(spec, dict):
        return [spec]
    out = [spec["value"]] if "value" in spec else list(spec.get("values", []))
    return out + [spec[k] for k in ("min", "max") if k in spec]


def _check_schema(path: Path, config: dict[str, Any]) -> None:
    import warnings

    with warnings.catch_warnings():  # pydantic's V2 notices on importing sweeps 0.2
        warnings.simplefilter("ignore")
        from sweeps import schema_violations_from_proposed_config

    def violations(candidate: dict[str, Any]) -> list[str]:
        try:
            return schema_violations_from_proposed_config(candidate)
        except ValueError as err:
            return [str(err)]

    method = config.get("method", "random")
    for key, spec in config["parameters"].items():  # first per parameter, to name the key
        problems = violations({"method": method, "parameters": {key: spec}})
        if problems:
            raise SweepConfigError(f"{path}: parameter {key!r}: {problems[0]}")
    problems = violations({k: v for k, v in config.items() if k not in _W_B_ONLY_KEYS})
    if problems:
        raise SweepConfigError(f"{path}: not a valid sweep configuration: {problems[0]}")
    cap = config.get("run_cap")
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
        raise SweepConfigError(f"{path}: run_cap: expected a positive integer, got {cap!r}")


def parse_trial_args(args: list[str]) -> dict[str, Any]:
    """``["preset=concrete", "method=blr", "alpha=0.1"]`` (W&B's ``${args_no_hyphens}``).

    Returns the :func:`trial` keywords: preset, method, seed, objective, val_fraction
    (from the ``tuning_val_fraction`` key) and ``config_overrides`` (every other key).
    A leading ``--`` on a key is dropped.
    """
    from udora.experiments.run.overrides import parse_set

    values = parse_set([a[2:] if a.startswith("--") else a for a in args])
    missing = [k for k in ("preset", "method") if k not in values]
    if missing:
        raise SweepConfigError(f"sweep trial: missing {' and '.join(missing)}=...")
    seed = values.pop("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise SweepConfigError(f"sweep trial: seed must be an integer >= 0, got {seed!r}")
    return {
        "preset": str(values.pop("preset")),
        "method": str(values.pop("method")),
        "seed": seed,
        "objective": check_objective(str(values.pop("objective", "nll"))),
        "val_fraction": check_val_fraction(values.pop("tuning_val_fraction", VAL_FRACTION)),
        "config_overrides": values,
    }
