"""Ablation studies: one factor, its levels, and the grid that varies it (docs/ablations.md).

A study is a small YAML file (the paper's five ship in ``experiments/studies/shipped/``)::

    name: width
    factor: width                 # a method config field, or preset.<field> (dotted)
    levels: [16, 32, 64, 128]     # or a mapping name -> value for non-scalar values
    scale: log2                   # log2 | linear | ordinal: the x of the OLS slopes
    suite: dev                    # or presets: [concrete, ...]
    methods: [nn_ensemble, laplace]
    seeds: [0, 1]
    set: {n_epochs: 100}          # fixed overrides of every run (method.<field> scopes one)

:func:`study_runs` resolves the grid presets x methods x levels x seeds, every run with
the factor set explicitly (``{**set, factor: value}``), through the same
:func:`udora.experiments.grid.bench.make_grid` as ``udora bench``, so bad fields and values
fail before anything runs. ``udora ablate`` runs it with ``bench``'s resumable,
failure-isolated grid and writes the study next to the runs (``STUDY_FILE``), which is how
``udora report`` recognises a study folder.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from udora.errors import UserError
from udora.experiments.studies.scales import SCALES as SCALES  # re-exported
from udora.experiments.studies.scales import choose_scale, is_number
from udora.oracle import reading
from udora.oracle.atomic import write_text

if TYPE_CHECKING:
    from udora.experiments.run.overrides import Overrides

STUDY_FILE = "study.yaml"
TUNING_PREFIX = "tuning."  # a factor of the tuning protocol itself (tuning.objective)


class StudyError(UserError):
    """A study file or study arguments that cannot be used; the message names the key."""


class TuneSpec(BaseModel):
    """A study that tunes at every level: ``udora tune`` per level with these settings."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    trials: int = Field(default=10, ge=1)
    objective: Literal["nll", "rmse"] = "nll"
    search: Literal["bayes", "random"] = "bayes"
    seed: int = Field(default=0, ge=0)


class Study(BaseModel):
    """One ablation study (see the module doc); ``levels`` keep their order."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    description: str = ""
    factor: str = Field(min_length=1)
    levels: list[Any] | dict[str, Any]
    scale: Literal["log2", "linear", "ordinal"] = "ordinal"
    suite: Literal["dev", "heldout", "all"] | None = "dev"
    presets: list[str] | None = None
    methods: list[str] = Field(min_length=1)
    seeds: list[int] = Field(default=[0], min_length=1)
    set: dict[str, Any] = Field(default_factory=dict)
    tune: TuneSpec | None = None

    @field_validator("levels")
    @classmethod
    def _two_or_more(cls, v: list[Any] | dict[str, Any]) -> list[Any] | dict[str, Any]:
        names = list(v) if isinstance(v, dict) else [level_name(x) for x in v]
        if len(names) < 2:
            raise ValueError("a study needs at least two levels")
        if len(set(names)) != len(names):
            raise ValueError(f"levels must be distinct, got {names}")
        return v

    @field_validator("seeds")
    @classmethod
    def _seeds(cls, v: list[int]) -> list[int]:
        if any(s < 0 for s in v) or len(set(v)) != len(v):
            raise ValueError(f"seeds must be distinct non-negative integers, got {v}")
        return v

    @field_validator("methods", "presets")
    @classmethod
    def _distinct(cls, v: list[str] | None) -> list[str] | None:
        if v is not None and len(set(v)) != len(v):  # a repeat would run (and count) twice
            raise ValueError(f"must be distinct, got {v}")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> Study:
        if self.factor.startswith(TUNING_PREFIX):
            if self.factor != f"{TUNING_PREFIX}objective" or self.tune is None:
                raise ValueError(
                    "factor: the only tuning factor is tuning.objective, with a tune: block"
                )
            if not set(self.level_values()) <= {"nll", "rmse"}:
                raise ValueError(f"tuning.objective levels are nll and rmse, got {self.levels}")
        if self.factor in self.set:
            raise ValueError(f"set: {self.factor!r} is the factor; it cannot also be fixed")
        if self.scale in ("log2", "linear"):
            bad = [v for v in self.level_values() if not is_number(v)]
            if bad or (self.scale == "log2" and any(v <= 0 for v in self.level_values())):
                raise ValueError(
                    f"scale {self.scale} needs {'positive ' if self.scale == 'log2' else ''}"
                    f"numeric levels, got {self.level_values()}; use scale: ordinal"
                )
        return self

    def level_names(self) -> list[str]:
        """Display names of the levels, in order (the value itself for scalars)."""
        if isinstance(self.levels, dict):
            return list(self.levels)
        return [level_name(v) for v in self.levels]

    def level_values(self) -> list[Any]:
        """The factor's value at each level, in order."""
        return list(self.levels.values()) if isinstance(self.levels, dict) else list(self.levels)

    def overrides(self, value: Any) -> Overrides:
        """The ``--set`` of the runs at the level of ``value``: ``set`` and the factor at
        ``value`` (``set`` alone for a ``tuning.`` factor, which reaches runs through tuning)."""
        from udora.experiments.run.overrides import Overrides

        tuning = self.factor.startswith(TUNING_PREFIX)
        return Overrides.from_flat(self.set if tuning else {**self.set, self.factor: value})

    def positions(self) -> list[float]:
        """The x of each level in slopes: log2 of the value, the value, or its index."""
        if self.scale == "log2":
            return [math.log2(float(v)) for v in self.level_values()]
        if self.scale == "linear":
            return [float(v) for v in self.level_values()]
        return [float(i) for i in range(len(self.levels))]

    def preset_names(self) -> list[str]:
        from udora.experiments.grid.bench import suite_presets

        return list(self.presets) if self.presets else suite_presets(self.suite or "dev")


def level_name(v: Any) -> str:
    """A level's display name: strings as they are, other values as compact JSON."""
    import json

    return v if isinstance(v, str) else json.dumps(v, separators=(",", ":"))


def _explain(err: ValidationError) -> str:
    first = err.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "study"
    if first["type"] == "extra_forbidden":
        return f"unknown key {where!r}; the keys are {', '.join(Study.model_fields)}"
    return f"{where}: {first['msg'].removeprefix('Value error, ')}"


def shipped_studies() -> list[str]:
    """Names of the studies shipped in ``experiments/studies/shipped/`` (the paper's, ours)."""
    from importlib.resources import files

    folder = files("udora.experiments.studies") / "shipped"
    return sorted(p.name[: -len(".yaml")] for p in folder.iterdir() if p.name.endswith(".yaml"))


def study_path(arg: str | Path) -> Path:
    """A study file: ``arg`` itself when it is a file, else the shipped study of that name
    (a folder named like a shipped study, say its results, does not hide it)."""
    from importlib.resources import files

    path = Path(arg)
    if path.is_file() or path.suffix in (".yaml", ".yml") or len(path.parts) > 1:
        return path
    shipped = files("udora.experiments.studies") / "shipped" / f"{arg}.yaml"
    if not shipped.is_file():
        raise StudyError(
            f"{arg}: no such study file or shipped study; shipped: {', '.join(shipped_studies())}"
        )
    return Path(str(shipped))


def load_study(path: str | Path) -> Study:
    """Read and validate a study YAML (or a shipped study's name, :func:`study_path`);
    errors name the file and the key."""
    path = study_path(path)
    try:
        data = reading.yaml_mapping(path, "study keys")
    except OSError as err:
        raise StudyError(f"{path}: cannot read the study file: {err.strerror}") from None
    except reading.BadFile as err:
        raise StudyError(str(err)) from None
    try:
        return Study(**data)
    except ValidationError as err:
        raise StudyError(f"{path}: {_explain(err)}") from None


def study_from_factor(
    factor: str,
    *,
    name: str | None = None,
    scale: str | None = None,
    suite: str = "dev",
    presets: list[str] | None = None,
    methods: list[str],
    seeds: list[int],
    fixed: dict[str, Any] | None = None,
    tune_trials: int | None = None,
) -> Study:
    """The study of ``udora ablate --factor key=v1,v2,...`` (values parsed as YAML scalars;
    an empty one is an error, never ``null``); ``scale`` None: the levels choose it
    (:func:`~udora.experiments.studies.scales.choose_scale`); ``tune_trials``: tune at
    every level with that many trials (``tune: {trials: N}``)."""
    from udora.experiments.run.checks import parse_names

    key, sep, values = factor.partition("=")
    if not sep or not key.strip() or not values.strip():
        raise StudyError(f"--factor: expected key=value1,value2,..., got {factor!r}")
    levels = [yaml.safe_load(v) for v in parse_names(values, "--factor", f"levels of {key}")]
    scale = scale if scale is not None else choose_scale(levels)[0]
    try:
        return Study(
            name=name or key.strip().replace(".", "_"),
            factor=key.strip(),
            levels=levels,
            scale=scale,
            suite=suite if presets is None else None,
            presets=presets,
            methods=methods,
            seeds=seeds,
            set=dict(fixed or {}),
            tune=None if tune_trials is None else TuneSpec(trials=tune_trials),
        )
    except ValidationError as err:
        raise StudyError(f"--factor/--scale/--tune-trials: {_explain(err)}") from None


def study_runs(study: Study, data_dir: str | Path | None = None, *, origin: str = "study"):
    """Every resolved run of ``study`` (presets x methods x levels x seeds), in that order,
    with default configs (a tuned study's runs get their tuned values when it runs).

    Raises StudyError naming ``origin`` when a preset, method, field or value is rejected.
    """
    from udora.experiments.grid.bench import make_grid
    from udora.methods import get_method_class

    runs = []
    tuning = study.factor.startswith(TUNING_PREFIX)  # not a config field: nothing to set
    if not tuning and not study.factor.startswith("preset."):
        for method in study.methods:
            try:
                fields = get_method_class(method).Config.model_fields
            except KeyError as err:
                raise StudyError(f"{origin}: methods: {err.args[0] if err.args else err}") from None
            if study.factor not in fields:
                raise StudyError(
                    f"{origin}: factor {study.factor!r}: method {method} has no such field "
                    f"(its fields: `udora methods {method}`); drop the method or change the factor"
                )
    for value in study.level_values():
        try:
            runs += make_grid(
                study.preset_names(),
                study.methods,
                study.seeds,
                study.overrides(value),
                data_dir=data_dir,
            )
        except (ValueError, KeyError) as err:
            message = err.args[0] if isinstance(err, KeyError) and err.args else err
            raise StudyError(f"{origin}: level {level_name(value)}: {message}") from None
    return runs


def write_study(study: Study, out: str | Path) -> Path:
    """Save ``study`` as ``out/study.yaml``; a different study already there is an error."""
    target = Path(out) / STUDY_FILE
    text = yaml.safe_dump(study.model_dump(), sort_keys=False)
    if target.exists():
        try:
            same = load_study(target) == study
        except StudyError:
            same = False
        if not same:
            raise StudyError(f"{target}: another study's results are in {out}; use another --out")
        return target
    return write_text(target, text)


def read_study(results_dir: str | Path) -> Study | None:
    """The study of a results folder, or None when it is not a study folder."""
    path = Path(results_dir) / STUDY_FILE
    return load_study(path) if path.is_file() else None
