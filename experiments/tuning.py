"""Hyperparameter tuning without the oracle: a validation split and W&B sweep configurations.

**Validation protocol.** The training sample of a (preset, seed) task (``task.X_train``,
``task.y_train``, n points) is split once into a fit part and a validation part by
:func:`split_training`: a random permutation of the n positions from the named stream
``"tuning_split"`` of the run seed (:func:`udora.oracle.task.stream`), the first
``round(val_fraction * n)`` positions (at least 1, at most n - 2) are the validation part.
The default fraction, :data:`VAL_FRACTION` = 0.2, is ours: the paper tunes on "validation
NLL" with W&B Bayesian sweeps (§5.1, Appendix D) but gives no split fraction. A
:func:`trial` fits the method on the fit part only and scores its predictive on the
validation part with :func:`gaussian_nll` (default) or :func:`rmse`; the validation
targets are the observed noisy training targets, so no oracle array (``f``, ``y`` of the
pool, ``post_mean``, ``post_var``, ``noise_var``) is ever read.

**Sweep configurations.** :func:`sweep_config` writes a standard W&B sweep (``method``,
``metric``, ``parameters`` from the method's ``Config.search_space()`` plus the fixed
``preset``, ``method``, ``seed``, ``objective``, ``val_fraction`` entries, ``run_cap``,
``command``); each proposal runs ``udora sweep trial key=value ...``.
:func:`load_sweep_config` validates such a file.
"""

from __future__ import annotations

import dataclasses
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import yaml

if TYPE_CHECKING:
    from udora.oracle.task import OracleTask

VAL_FRACTION = 0.2
SPLIT_STREAM = "tuning_split"
OBJECTIVES = {"nll": "val_nll", "rmse": "val_rmse"}  # objective -> metric name
SEARCHES = ("bayes", "random", "grid")
FIXED = ("preset", "method", "seed", "objective", "val_fraction")  # non-method sweep keys
COMMAND = ["${env}", "udora", "sweep", "trial", "${args_no_hyphens}"]
_W_B_ONLY_KEYS = ("run_cap",)  # documented W&B keys the ``sweeps`` 0.2 schema lacks


class SweepConfigError(ValueError):
    """A sweep configuration (or its file) that cannot be used; the message names why."""


# --------------------------------------------------------------------------- objectives


def gaussian_nll(mean: np.ndarray, total_var: np.ndarray, y: np.ndarray) -> float:
    """Mean per-point negative log density of ``y`` under ``N(mean, total_var)``; shapes (v,).

    A non-positive variance gives ``inf`` (the predictive is no density there).
    """
    mean, var, y = (np.asarray(a, dtype=np.float64) for a in (mean, total_var, y))
    _same_shape(mean, var, y)
    if np.any(var <= 0):
        return math.inf
    return float(np.mean(0.5 * np.log(2 * np.pi * var) + 0.5 * (y - mean) ** 2 / var))


def rmse(mean: np.ndarray, y: np.ndarray) -> float:
    """Root mean squared error of ``mean`` against ``y``; shapes (v,)."""
    mean, y = (np.asarray(a, dtype=np.float64) for a in (mean, y))
    _same_shape(mean, y)
    return float(np.sqrt(np.mean((y - mean) ** 2)))


def _same_shape(*arrays: np.ndarray) -> None:
    shape = arrays[0].shape
    if len(shape) != 1 or shape[0] < 1 or any(a.shape != shape for a in arrays):
        raise ValueError(f"expected equal shapes (v,), got {[a.shape for a in arrays]}")


def objective_value(objective: str, mean: np.ndarray, total_var: np.ndarray, y: np.ndarray):
    """The named objective (``nll`` or ``rmse``) on validation arrays."""
    check_objective(objective)
    return gaussian_nll(mean, total_var, y) if objective == "nll" else rmse(mean, y)


def check_objective(objective: str) -> str:
    if objective not in OBJECTIVES:
        raise SweepConfigError(f"unknown objective {objective!r}; valid: {', '.join(OBJECTIVES)}")
    return objective


def check_val_fraction(val_fraction: Any) -> float:
    if isinstance(val_fraction, bool) or not isinstance(val_fraction, int | float):
        raise SweepConfigError(f"val_fraction: expected a number, got {val_fraction!r}")
    if not 0 < val_fraction < 1:
        raise SweepConfigError(f"val_fraction: must be in (0, 1), got {val_fraction}")
    return float(val_fraction)


# --------------------------------------------------------------------------- split and trial


def split_training(n: int, seed: int, val_fraction: float = VAL_FRACTION):
    """(fit positions, validation positions) into the n-point training sample; sorted, disjoint.

    Seeded by the stream ``"tuning_split"`` of ``seed``; ``round(val_fraction * n)``
    validation points, at least 1 and at most n - 2 (a fit needs 2 points).
    """
    from udora.oracle.task import stream

    check_val_fraction(val_fraction)
    if n < 3:
        raise ValueError(f"need at least 3 training points to split, got {n}")
    n_val = min(max(1, round(val_fraction * n)), n - 2)
    perm = stream(int(seed), SPLIT_STREAM).permutation(n)
    return np.sort(perm[n_val:]), np.sort(perm[:n_val])


@dataclasses.dataclass
class TrialResult:
    """One trial: the objective and the validation arrays it was computed from, (v,) each."""

    objective: str
    metric: str  # "val_nll" or "val_rmse"
    value: float
    targets: np.ndarray  # observed training targets of the validation part
    mean: np.ndarray
    aleatoric: np.ndarray
    epistemic: np.ndarray
    fit_idx: np.ndarray  # positions into the training sample
    val_idx: np.ndarray
    config: dict[str, Any]  # the method's full resolved config

    def summary(self) -> dict[str, Any]:
        """JSON-ready: metric, value, both objectives, sizes and config."""
        return {
            self.metric: self.value,
            "objective": self.objective,
            "val_nll": gaussian_nll(self.mean, self.aleatoric + self.epistemic, self.targets),
            "val_rmse": rmse(self.mean, self.targets),
            "n_fit": int(self.fit_idx.size),
            "n_val": int(self.val_idx.size),
            "config": self.config,
        }


def trial_on_task(
    task: OracleTask,
    method: str,
    seed: int,
    config_overrides: dict[str, Any] | None = None,
    objective: str = "nll",
    val_fraction: float = VAL_FRACTION,
) -> TrialResult:
    """Fit ``method`` on the fit part of ``task``'s training sample, score the validation part.

    Reads only ``task.X``, ``task.train_idx``, ``task.y_train`` and the task's knowledge
    (the prior only for methods that declare ``uses_task_prior``, as in a run).
    """
    from udora import methods

    check_objective(objective)
    model = methods.get_method(method, **dict(config_overrides or {}))
    X_train, y_train = task.X_train, np.asarray(task.y_train)
    fit_idx, val_idx = split_training(y_train.shape[0], seed, val_fraction)
    knowledge = task.knowledge(with_prior=type(model).uses_task_prior)
    knowledge = dataclasses.replace(knowledge, n=int(fit_idx.size))
    model.fit(X_train[fit_idx], y_train[fit_idx], seed=int(seed), knowledge=knowledge)
    pred = model.predict(X_train[val_idx])
    targets = y_train[val_idx].astype(np.float64)
    value = objective_value(objective, pred.mean, pred.total, targets)
    return TrialResult(
        objective, OBJECTIVES[objective], value, targets, pred.mean, pred.aleatoric,
        pred.epistemic, fit_idx, val_idx, model.config.to_dict(),
    )  # fmt: skip


def trial(
    preset: str | Path,
    method: str,
    seed: int,
    config_overrides: dict[str, Any] | None = None,
    objective: str = "nll",
    data_dir: str | Path | None = None,
    val_fraction: float = VAL_FRACTION,
) -> TrialResult:
    """Build the task of ``preset`` at ``seed`` and run :func:`trial_on_task` on it.

    ``config_overrides`` are method fields and, with the ``preset.`` prefix, preset
    fields, as for ``udora run --set``; bad input raises before anything is fitted.
    """
    from udora.experiments.run import _cached_task
    from udora.experiments.spec import RunSpec, resolve, split_overrides

    check_objective(objective)
    check_val_fraction(val_fraction)
    overrides = dict(config_overrides or {})
    run = resolve(RunSpec(str(preset), method, int(seed), overrides), data_dir)
    dd = str(data_dir) if data_dir is not None else os.environ.get("UDORA_DATA_DIR")
    task = _cached_task(run.preset.model_dump_json(), run.seed, dd)
    method_over, _ = split_overrides(overrides)
    return trial_on_task(task, method, run.seed, method_over, objective, val_fraction)


# --------------------------------------------------------------------------- sweep configs


def sweep_config(
    preset: str,
    method: str,
    *,
    objective: str = "nll",
    search: str = "bayes",
    trials: int = 20,
    seed: int = 0,
    val_fraction: float = VAL_FRACTION,
) -> dict[str, Any]:
    """A W&B sweep configuration for tuning ``method`` on ``preset`` (see module doc).

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
    load_preset(preset)  # an unknown preset raises, naming the valid ones
    cls = methods.get_method_class(method)
    space = cls.Config().search_space()
    clash = sorted(set(space) & set(FIXED))
    if clash:
        raise SweepConfigError(f"{method}: search-space keys {clash} clash with sweep keys")
    if search == "grid":
        continuous = [k for k, v in space.items() if not _grid_ready(v)]
        if continuous:
            raise SweepConfigError(
                f"grid search needs finite values, but {method}'s {continuous} are continuous; "
                "use --search random or bayes"
            )
    fixed = {"preset": preset, "method": method, "seed": seed, "objective": objective,
             "val_fraction": val_fraction}  # fmt: skip
    return {
        "name": f"{preset}-{method}-{objective}",
        "method": search,
        "metric": {"name": OBJECTIVES[objective], "goal": "minimize"},
        "parameters": {**{k: {"value": v} for k, v in fixed.items()}, **space},
        "run_cap": trials,
        "command": list(COMMAND),
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
        out.write_text(yaml.safe_dump(config, sort_keys=False))
    except OSError as err:
        raise SweepConfigError(f"--out: cannot write {out}: {err.strerror}") from None
    return out


def load_sweep_config(path: str | Path) -> dict[str, Any]:
    """Read and validate a sweep YAML written by ``udora sweep init`` (or edited by hand).

    Checks the W&B schema (via the ``sweeps`` package), the fixed entries (``preset``,
    ``method``, ``objective``, ``seed``, ``val_fraction``), that every other parameter
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
        config = yaml.safe_load(path.read_text())
    except OSError as err:
        raise SweepConfigError(f"{path}: cannot read the sweep file: {err.strerror}") from None
    except yaml.YAMLError as err:
        raise SweepConfigError(f"{path}: not valid YAML: {' '.join(str(err).split())}") from None
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
    from udora.oracle.preset import load_preset

    load_preset(fixed["preset"])
    for key, check in (("objective", check_objective), ("val_fraction", check_val_fraction)):
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
        if key in FIXED:
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

    Returns the :func:`trial` keywords: preset, method, seed, objective, val_fraction and
    ``config_overrides`` (every other key). A leading ``--`` on a key is dropped.
    """
    from udora.experiments.spec import parse_set

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
        "val_fraction": check_val_fraction(values.pop("val_fraction", VAL_FRACTION)),
        "config_overrides": values,
    }
