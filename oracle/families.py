"""The ``truth`` field of a preset: which ground-truth family draws ``f`` (schema only).

The families and their exact posteriors are :mod:`oracle.truths`; docs/design.md,
"Ground-truth families". Kept free of JAX, like the rest of the preset schema.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

TRUTH_DEFAULTS = {"gp": {}, "warped": {"warp": 2.0}, "features": {"features": 64, "seed": 0}}


class Truth(BaseModel):
    """The ground-truth family of ``f`` (:mod:`oracle.truths`; docs/design.md,
    "Ground-truth families"): ``gp`` (the fitted GP, the default), ``warped`` (the GP on
    inputs warped with strength ``warp``, default 2) or ``features`` (a Bayesian linear
    model in ``features`` random features per kernel component, default 64, drawn from
    ``seed``, default 0). A field of another family is an error. A preset file or
    ``--set preset.truth=NAME`` may give the family's name alone."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    family: Literal["gp", "warped", "features"] = "gp"
    warp: float | None = Field(default=None, gt=0.0)
    features: int | None = Field(default=None, ge=1)
    seed: int | None = Field(default=None, ge=0)

    @model_validator(mode="before")
    @classmethod
    def _name_alone(cls, value: Any) -> Any:
        return {"family": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _family_fields(self) -> Truth:
        defaults = TRUTH_DEFAULTS[self.family]
        for name in ("warp", "features", "seed"):
            value = getattr(self, name)
            if name not in defaults and value is not None:
                takes = ", ".join(defaults) or "no other field"
                raise ValueError(
                    f"{name} is not a field of the {self.family!r} family (it takes {takes})"
                )
            if name in defaults and value is None:
                object.__setattr__(self, name, defaults[name])
        return self
