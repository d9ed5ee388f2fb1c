"""The classification preset: real covariates and labels, the fitted latent GP, the
training-sample design and the sampler's settings (docs/design.md, "Classification").

A preset says ``kind: classification``. Its ``classes`` name the label codes 0..C-1 of
the data file's ``target`` column (C = 2 is a binary task with one latent function and
the probit link; C > 2 has C latent functions and the softmax link). ``prepare`` records
what is done to the real table before it is standardised (rows dropped, heavy-tailed
columns put on a signed log scale); ``kernel`` is shared by the latent functions and
``mean`` holds one constant per latent function (1 for binary, C for multiclass), both
in standardised input units as fitted on the real labels (``fit``). ``latent_scale``
multiplies the latent's deviation from its mean inside the prior the oracle conditions
on (1: the fitted kernel; larger: sharper class probabilities, less aleatoric
uncertainty). Validating a preset needs no JAX.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from udora.names import NAME, RULE
from udora.oracle.kernels import KernelSpecError, parse_kernel
from udora.oracle.preset import Source, parse_preset, set_field

CLASSIFICATION = "classification"
SUITES = ("cls-dev", "cls-heldout")
POOL_LIMIT = 10_000  # the realised latent is one joint prior draw over the pool


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Prepare(_Frozen):
    """What is done to the real table before standardising, in this order.

    ``drop_rows``: data rows removed (0 is the first row after the header), e.g. sensor
    glitches that would dominate the z-scores. ``slog``: columns replaced by
    ``sign(x) log(1 + |x|)`` (heavy tails; ``log1p`` for non-negative columns). ``why``:
    the reason, kept with the preset.
    """

    drop_rows: tuple[int, ...] = ()
    slog: tuple[str, ...] = ()
    why: str = ""

    @field_validator("drop_rows")
    @classmethod
    def _rows(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        if any(r < 0 for r in v) or len(set(v)) != len(v):
            raise ValueError("drop_rows must be distinct row numbers >= 0")
        return tuple(sorted(v))


class Sampler(_Frozen):
    """NUTS settings (per chain) and the Monte Carlo sizes of the targets.

    ``draws`` are kept after ``warmup`` adaptation steps; while a diagnostic fails, each
    chain gets ``extend`` more draws, up to ``max_draws``, before the task is refused.
    Standard errors come from ``batches`` batch means per chain; softmax probabilities
    from ``softmax_draws`` conditional normal draws per posterior draw and point.
    """

    chains: int = Field(default=4, ge=2)
    warmup: int = Field(default=500, ge=50)
    draws: int = Field(default=1000, ge=100)
    extend: int = Field(default=1000, ge=100)
    max_draws: int = Field(default=4000, ge=100)
    batches: int = Field(default=10, ge=2)
    softmax_draws: int = Field(default=32, ge=1)

    @model_validator(mode="after")
    def _budget(self) -> Sampler:
        if self.max_draws < self.draws:
            raise ValueError(f"max_draws ({self.max_draws}) must be >= draws ({self.draws})")
        if self.draws % self.batches or self.extend % self.batches:
            raise ValueError(
                f"draws ({self.draws}) and extend ({self.extend}) must be multiples of "
                f"batches ({self.batches})"
            )
        return self


class ClassificationPreset(_Frozen):
    """One semi-synthetic classification dataset. Shapes: ``features`` d names,
    ``classes`` C names, ``mean`` 1 (binary) or C constants, ``shift`` 5 fractions."""

    # The fields that build the task, hashed into its identity (the name, suite, fit
    # record and realism scores are descriptions: refitting to the same values renames
    # nothing; docs/design.md, "The life of a run").
    TASK_FIELDS: ClassVar[tuple[str, ...]] = (
        "source",
        "features",
        "target",
        "classes",
        "prepare",
        "pool_size",
        "pool_seed",
        "n_train",
        "kernel",
        "mean",
        "latent_scale",
        "shift",
        "sampler",
    )

    kind: Literal["classification"] = CLASSIFICATION
    name: str
    suite: Literal["cls-dev", "cls-heldout", "test"]
    source: Source
    features: tuple[str, ...] = Field(min_length=1)
    target: str = "target"
    classes: tuple[str, ...] = Field(min_length=2)
    prepare: Prepare = Prepare()
    pool_size: int = Field(gt=1, le=POOL_LIMIT)
    pool_seed: int = Field(default=0, ge=0)
    n_train: int = Field(gt=0)
    kernel: tuple[dict[str, Any], ...]
    mean: tuple[float, ...]
    latent_scale: float = Field(default=1.0, gt=0.0)
    shift: tuple[float, float, float, float, float]
    sampler: Sampler = Sampler()
    fit: dict[str, Any] | None = None  # how the kernel was fitted on the real labels
    realism: dict[str, Any] | None = None  # held-out scores on the real labels (docs)

    @property
    def d(self) -> int:
        return len(self.features)

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    @property
    def latent_dim(self) -> int:
        """Latent functions: 1 (binary, probit) or C (multiclass, softmax)."""
        return 1 if self.n_classes == 2 else self.n_classes

    @field_validator("name")
    @classmethod
    def _a_name(cls, v: str) -> str:
        if NAME.fullmatch(v) is None:
            raise ValueError(f"{v!r} is not a valid name: expected {RULE}")
        return v

    @field_validator("features", "classes")
    @classmethod
    def _unique(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(v)) != len(v):
            raise ValueError("names must be unique")
        return v

    @field_validator("shift")
    @classmethod
    def _fractions(cls, v: tuple[float, ...]) -> tuple[float, ...]:
        if any(f < 0 for f in v):
            raise ValueError(f"bin fractions must be >= 0, got {list(v)}")
        if not math.isclose(sum(v), 1.0, abs_tol=1e-6):
            raise ValueError(f"the five bin fractions must sum to 1, got {sum(v):.6g}")
        return v

    @field_validator("mean")
    @classmethod
    def _finite(cls, v: tuple[float, ...]) -> tuple[float, ...]:
        if not all(math.isfinite(x) for x in v):
            raise ValueError(f"mean must be finite numbers, got {list(v)}")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> ClassificationPreset:
        if self.n_train > self.pool_size:
            raise ValueError(
                f"n_train ({self.n_train}) must not exceed pool_size ({self.pool_size})"
            )
        if len(self.mean) != self.latent_dim:
            raise ValueError(
                f"mean has {len(self.mean)} constants; a task with {self.n_classes} classes "
                f"has {self.latent_dim} latent function(s), one constant each"
            )
        unknown = sorted(set(self.prepare.slog) - set(self.features))
        if unknown:
            raise ValueError(f"prepare.slog names columns that are not features: {unknown}")
        try:
            specs = parse_kernel(list(self.kernel), self.d)
        except KernelSpecError as err:
            raise ValueError(str(err)) from None
        kernel = tuple({"type": s.type, **s.model_dump(exclude={"type"})} for s in specs)
        object.__setattr__(self, "kernel", kernel)
        return self

    def with_overrides(
        self, overrides: dict[str, Any], *, origin: str = "override"
    ) -> ClassificationPreset:
        """A derived preset with dotted fields replaced (``latent_scale``,
        ``sampler.draws``, ``n_train``); validated like a file."""
        data = self.model_dump()
        for key, value in overrides.items():
            set_field(data, key, value, origin)
        return parse_preset(data, origin)
