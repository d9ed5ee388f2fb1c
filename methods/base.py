"""The method contract: a validated :class:`Prediction`, a frozen config, :class:`UQMethod`.

A method is one class with a ``Config`` (typed fields with defaults, a declared search
space in W&B sweep-parameter form and a declared quick budget) and two calls:
``fit(X, y, *, seed, knowledge)`` on original-unit training data and
``predict(X) -> Prediction``. The constructor only stores the config; ``fit`` learns;
learned state lives in attributes that end in ``_``. ``knowledge`` is the frozen
:class:`~udora.oracle.prior.TaskKnowledge` of the task (feature names, d, n; the GP prior
only for classes that declare ``uses_task_prior``).
"""

from __future__ import annotations

import abc
import copy
from typing import Any, ClassVar, Self

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from udora.errors import UserError
from udora.methods.prediction import Prediction, PredictionError
from udora.oracle.kinds import REGRESSION
from udora.oracle.prior import TaskKnowledge

Knowledge = TaskKnowledge | None  # what fit receives: None only when called outside a run

__all__ = [
    "ConfigError",
    "Knowledge",
    "MethodConfig",
    "NotFittedError",
    "Prediction",
    "PredictionError",
    "TaskKnowledge",
    "UQMethod",
    "check_x",
    "check_xy",
    "make_config",
]


class ConfigError(UserError):
    """A method config override that names an unknown field or has a bad value."""


class MethodConfig(BaseModel):
    """Base of every method config: frozen, unknown fields are errors, defaults validated.

    Every field needs a default (``udora bench`` builds each method's default config) and
    a constraint that refuses values the method cannot use (``Field(ge=2)`` for a member
    count, ``gt=0`` for a budget, ...): pydantic's error names the field, and a default
    is checked against its own constraint too.

    ``SEARCH_SPACE`` maps field names to W&B sweep-parameter specs, e.g.
    ``{"lr": {"distribution": "log_uniform_values", "min": 1e-4, "max": 1e-2}}`` or
    ``{"width": {"values": [16, 32, 64]}}``. Every key must be a field of the config.

    ``QUICK`` is the method's quick budget: the field overrides ``udora bench --quick``
    applies (fewer epochs, trees or steps), declared beside the search space. Field names
    follow one vocabulary across methods (docs/adding_a_method.md, "Field names").
    """

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)

    SEARCH_SPACE: ClassVar[dict[str, dict[str, Any]]] = {}
    QUICK: ClassVar[dict[str, Any]] = {}
    # Fields that tasks of a kind never read ({"classification": ("standardize_y",)}):
    # left out of that kind's search space, so that no trial budget goes to a no-op.
    UNUSED_ON: ClassVar[dict[str, tuple[str, ...]]] = {}

    def search_space(self) -> dict[str, dict[str, Any]]:
        """The sweep parameters for this config (a fresh copy; subclasses may add to it)."""
        return copy.deepcopy(self.SEARCH_SPACE)

    def unused_on(self, kind: str) -> tuple[str, ...]:
        """The fields a task of ``kind`` never reads under this config (``UNUSED_ON``)."""
        return self.UNUSED_ON.get(kind, ())

    def search_space_on(self, kind: str) -> dict[str, dict[str, Any]]:
        """:meth:`search_space` without the fields tasks of ``kind`` never read."""
        unused = set(self.unused_on(kind))
        return {k: v for k, v in self.search_space().items() if k not in unused}

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(cls.model_fields)

    def to_dict(self) -> dict[str, Any]:
        """Plain Python values, safe for ``yaml.safe_dump``; inverse of ``Config(**d)``."""
        return self.model_dump(mode="json")


def _plain(value: Any) -> Any:
    """numpy scalars (as sweep suggestions give them) to Python scalars."""
    return value.item() if isinstance(value, np.generic) else value


def _problem(error: dict[str, Any]) -> str:
    """``field: message`` of one pydantic error; just the message for a whole-config one."""
    where = ".".join(str(p) for p in error["loc"])
    return f"{where}: {error['msg']}" if where else error["msg"]


def make_config(cls: type[MethodConfig], overrides: dict[str, Any]) -> MethodConfig:
    """``cls(**overrides)``, with errors that name the method's valid fields."""
    valid = ", ".join(cls.field_names())
    unknown = sorted(set(overrides) - set(cls.model_fields))
    if unknown:
        raise ConfigError(f"{cls.__qualname__}: unknown field(s) {unknown}; valid fields: {valid}")
    try:
        return cls(**{k: _plain(v) for k, v in overrides.items()})
    except ValidationError as err:
        problems = "; ".join(_problem(e) for e in err.errors())
        raise ConfigError(f"{cls.__qualname__}: {problems}; valid fields: {valid}") from None


class NotFittedError(RuntimeError):
    """``predict`` called before ``fit``."""


# Method families, in the order reports group them; the GP references (which know the
# generating kernel or its linear part) are shown apart from the methods.
FAMILIES = ("NN", "Bayesian NN", "trees", "linear & kernel", "other", "GP reference")
# What a method's aleatoric variance is: one value per point, or one value for every point
# (homoscedastic noise, or none at all). With "constant", the correlations with the AU
# target are undefined (the metrics that need "varying_au", udora.scoring.registry) and
# the report says so where they are empty; the contract checks the declaration. A method
# whose answer differs by task kind declares a dict literal, ``{kind: one of ALEATORIC}``
# (a kind it leaves out is "per point"), read through :func:`aleatoric_on`.
ALEATORIC = ("per point", "constant")


def aleatoric_on(declared: str | dict[str, str], kind: str) -> str:
    """What a method's ``aleatoric`` declaration says on task kind ``kind``: one of
    :data:`ALEATORIC`."""
    if isinstance(declared, dict):
        return declared.get(kind, "per point")
    return declared


class UQMethod(abc.ABC):
    """A regression method that reports aleatoric and epistemic variance per point.

    Subclasses set ``Config`` and implement :meth:`fit` and :meth:`predict`; the
    ``@register("name")`` decorator sets ``name``. A reference method that needs the
    task's generating prior sets ``uses_task_prior = True``; the runner then puts the prior
    into the ``knowledge`` it hands to ``fit`` (every other method gets ``prior=None``).
    ``libraries`` names the distributions it depends on, whose versions each run records.
    """

    Config: ClassVar[type[MethodConfig]] = MethodConfig
    name: ClassVar[str] = "unregistered"
    # The group the report shows the method in (one of FAMILIES); set as a plain string
    # literal in the class body, where `udora methods` reads it without importing.
    family: ClassVar[str] = "other"
    # One of ALEATORIC (or a dict of them by kind), a literal in the class body like
    # ``family``.
    aleatoric: ClassVar[str | dict[str, str]] = "per point"
    uses_task_prior: ClassVar[bool] = False
    # The task kinds the method can be run on (udora.oracle.kinds); its ``predict``
    # returns each kind's prediction type (udora.methods.prediction).
    kinds: ClassVar[tuple[str, ...]] = (REGRESSION,)
    # Kinds the method leaves out because they make no sense for it, each with the reason
    # `udora methods` and a refused run show: ``(kind, why)`` pairs, a tuple literal in
    # the class body.
    not_for: ClassVar[tuple[tuple[str, str], ...]] = ()
    # The distributions (pip names) the method runs on besides udora and JAX: every
    # result.json records their versions (docs/design.md, "Methods"). Declare, don't guess.
    libraries: ClassVar[tuple[str, ...]] = ()

    def __init__(self, config: MethodConfig | None = None, **overrides: Any) -> None:
        if config is not None:
            if not isinstance(config, self.Config):
                raise ConfigError(f"{type(self).__name__}: expected a {self.Config.__qualname__}")
            overrides = {**config.to_dict(), **overrides}
        self.config = make_config(self.Config, overrides)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.config!r})"

    @abc.abstractmethod
    def fit(self, X: np.ndarray, y: np.ndarray, *, seed: int, knowledge: Knowledge = None) -> Self:
        """Learn from ``X`` ``(n, d)`` and ``y`` ``(n,)`` in original units; returns self.

        ``seed`` is the run seed (all randomness derives from it); ``knowledge`` is what
        the method may know about the task (None when called outside a run).
        """

    @abc.abstractmethod
    def predict(self, X: np.ndarray) -> Prediction:
        """The predictive at ``X`` ``(m, d)``: a :class:`Prediction` of m points."""

    # A method with an exact joint predictive overrides this with a method
    # ``predict_joint(X (B, tau, d)) -> (B, tau, tau)``: the epistemic covariance of its
    # mean function over each batch of points, original units, whose diagonal is its
    # ``predict`` EU there (docs/adding_a_method.md, "Joint predictions"). Member-based
    # methods need none: the scorer takes the members' covariance.
    predict_joint: ClassVar[Any] = None

    def diagnostics(self) -> dict[str, float]:
        """Scalars about the fit itself, recorded in result.json (e.g. SWAG's drift).

        None of them is a score against the oracle; the default has none.
        """
        return {}

    def _check_fitted(self) -> None:
        if not getattr(self, "fitted_", False):
            raise NotFittedError(f"{self.name}: call fit(X, y, seed=...) before predict")


def check_xy(X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    """Validated float64 copies of training inputs ``(n, d)`` and targets ``(n,)``."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X: expected shape (n, d), got {X.shape}")
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ValueError(f"y: expected shape ({X.shape[0]},), got {y.shape}")
    if X.shape[0] < 2:
        raise ValueError(f"need at least 2 training points, got {X.shape[0]}")
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
        raise ValueError("X and y must be finite")
    return X, y


def check_x(X: Any, d: int) -> np.ndarray:
    """Validated float64 copy of prediction inputs ``(m, d)``."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != d:
        raise ValueError(f"X: expected shape (m, {d}), got {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("X must be finite")
    return X
