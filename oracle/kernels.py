"""Kernel specifications and their GPJax kernels.

A preset's kernel is a sum of components. Each component is a small frozen spec (a
``type`` plus its hyperparameters, in standardised input units); :func:`build_kernel`
turns the list into one GPJax kernel whose conventions are GPJax's own. Inputs ``x, y``
are standardised feature vectors of length ``d``; ``r = ||(x - y) / l||`` with an ARD
lengthscale vector ``l`` (length ``d``) or a scalar.

The specs need only pydantic; JAX and GPJax are imported when a kernel is built, so that
loading and validating a preset stays cheap (a bad preset name answers without JAX).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from udora.errors import UserError

if TYPE_CHECKING:
    import gpjax as gpx

Lengthscale = float | list[float]


class _Component(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    variance: float = Field(gt=0.0)

    def lengthscales(self) -> list[float] | None:
        return None


class _Stationary(_Component):
    lengthscale: Lengthscale = 1.0

    @field_validator("lengthscale")
    @classmethod
    def _positive(cls, v: Lengthscale) -> Lengthscale:
        values = v if isinstance(v, list) else [v]
        if not values or any(not (x > 0.0 and x < float("inf")) for x in values):
            raise ValueError("lengthscales must be finite and > 0")
        return v

    def lengthscales(self) -> list[float]:
        return self.lengthscale if isinstance(self.lengthscale, list) else [self.lengthscale]


class RBF(_Stationary):
    """Squared exponential: ``k = variance * exp(-r^2 / 2)``."""

    type: Literal["rbf"] = "rbf"


class Matern12(_Stationary):
    """Matérn-1/2 (exponential): ``k = variance * exp(-r)``."""

    type: Literal["matern12"] = "matern12"


class Matern32(_Stationary):
    """Matérn-3/2: ``k = variance * (1 + sqrt(3) r) exp(-sqrt(3) r)``."""

    type: Literal["matern32"] = "matern32"


class Matern52(_Stationary):
    """Matérn-5/2: ``k = variance * (1 + sqrt(5) r + 5 r^2 / 3) exp(-sqrt(5) r)``."""

    type: Literal["matern52"] = "matern52"


class RationalQuadratic(_Stationary):
    """Rational quadratic: ``k = variance * (1 + r^2 / (2 alpha))^(-alpha)``; alpha is fixed."""

    type: Literal["rational_quadratic"] = "rational_quadratic"
    alpha: float = Field(default=1.0, gt=0.0)


class Periodic(_Stationary):
    """Periodic (MacKay).

    ``k = variance * exp(-1/2 sum_j (sin(pi (x_j - y_j) / period) / l_j)^2)``.
    """

    type: Literal["periodic"] = "periodic"
    period: float = Field(default=1.0, gt=0.0)


class PoweredExponential(_Stationary):
    """Powered exponential: ``k = variance * exp(-r^power)``; power is fixed (0 < power <= 2)."""

    type: Literal["powered_exponential"] = "powered_exponential"
    power: float = Field(default=1.0, gt=0.0, le=2.0)


class Linear(_Component):
    """Linear (dot product): ``k = variance * x^T y``."""

    type: Literal["linear"] = "linear"


class ArcCosine(_Component):
    """Arc-cosine kernel of Cho & Saul (2009), order n in {0, 1, 2}.

    With ``<x, y>_w = sum_j w_j x_j y_j + b`` (``w`` = weight_variance, scalar or length d;
    ``b`` = bias_variance) and ``theta = arccos(<x, y>_w / sqrt(<x, x>_w <y, y>_w))``:
    ``k = variance / pi * J_n(theta) * (<x, x>_w <y, y>_w)^(n/2)`` with ``J_0 = pi - theta``,
    ``J_1 = sin theta + (pi - theta) cos theta``,
    ``J_2 = 3 sin theta cos theta + (pi - theta)(1 + 2 cos^2 theta)``.
    """

    type: Literal["arccosine"] = "arccosine"
    order: Literal[0, 1, 2] = 0
    weight_variance: Lengthscale = 1.0
    bias_variance: float = Field(default=1.0, ge=0.0)

    def lengthscales(self) -> list[float] | None:
        w = self.weight_variance
        return w if isinstance(w, list) else None


ComponentSpec = Annotated[
    RBF
    | Matern12
    | Matern32
    | Matern52
    | RationalQuadratic
    | Periodic
    | PoweredExponential
    | Linear
    | ArcCosine,
    Field(discriminator="type"),
]
_COMPONENT_TYPES = {
    cls.model_fields["type"].default: cls
    for cls in (
        RBF,
        Matern12,
        Matern32,
        Matern52,
        RationalQuadratic,
        Periodic,
        PoweredExponential,
        Linear,
        ArcCosine,
    )
}
KERNEL_TYPES: tuple[str, ...] = tuple(_COMPONENT_TYPES)
STATIONARY_TYPES: tuple[str, ...] = tuple(
    name for name, cls in _COMPONENT_TYPES.items() if issubclass(cls, _Stationary)
)
_ADAPTER = TypeAdapter(ComponentSpec)


class KernelSpecError(UserError):
    """A kernel component list that cannot describe a kernel on d inputs."""


def parse_kernel(components: list[dict[str, Any]] | tuple[Any, ...], d: int) -> tuple:
    """Validate a list of component dicts (or specs) for inputs of dimension ``d``.

    Returns a tuple of frozen component specs. Raises :class:`KernelSpecError` naming the
    component (by index and type) and what was expected.
    """
    if not components:
        raise KernelSpecError("kernel: expected a non-empty list of components")
    specs = []
    for i, comp in enumerate(components):
        raw = comp.model_dump() if isinstance(comp, BaseModel) else dict(comp)
        kind = raw.get("type")
        if kind not in _COMPONENT_TYPES:
            raise KernelSpecError(
                f"kernel component {i}: unknown type {kind!r}; "
                f"valid types: {', '.join(KERNEL_TYPES)}"
            )
        try:
            spec = _ADAPTER.validate_python(raw)
        except ValidationError as err:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc'][1:]) or 'value'}: {e['msg']}"
                for e in err.errors()
            )
            raise KernelSpecError(f"kernel component {i} ({kind}): {problems}") from None
        scales = spec.lengthscales()
        if scales is not None and len(scales) not in (1, d):
            field = "weight_variance" if kind == "arccosine" else "lengthscale"
            raise KernelSpecError(
                f"kernel component {i} ({kind}): {field} has length {len(scales)}, "
                f"expected a scalar or a list of length d={d}"
            )
        specs.append(spec)
    return tuple(specs)


def _gpjax_component(spec: Any, d: int) -> gpx.kernels.AbstractKernel:
    import gpjax as gpx
    import jax.numpy as jnp
    import paramax

    kinds = gpx.kernels
    if spec.type == "linear":
        return kinds.Linear(variance=spec.variance, n_dims=d)
    if spec.type == "arccosine":
        # Weight and bias variances are held fixed (the paper reports 1 for both presets).
        return kinds.ArcCosine(
            order=spec.order,
            variance=spec.variance,
            weight_variance=paramax.non_trainable(jnp.asarray(spec.weight_variance, dtype=float)),
            bias_variance=paramax.non_trainable(jnp.asarray(spec.bias_variance, dtype=float)),
            n_dims=d,
        )
    ls = jnp.asarray(spec.lengthscale, dtype=float)
    common = {"lengthscale": ls, "variance": spec.variance, "n_dims": d}
    if spec.type == "rational_quadratic":
        # Fixed, never trained: the paper holds alpha = 1.
        return kinds.RationalQuadratic(
            **common, alpha=paramax.non_trainable(jnp.asarray(spec.alpha))
        )
    if spec.type == "periodic":
        return kinds.Periodic(**common, period=spec.period)
    if spec.type == "powered_exponential":
        return kinds.PoweredExponential(
            **common, power=paramax.non_trainable(jnp.asarray(spec.power))
        )
    cls = {
        "rbf": kinds.RBF,
        "matern12": kinds.Matern12,
        "matern32": kinds.Matern32,
        "matern52": kinds.Matern52,
    }[spec.type]
    return cls(**common)


def build_kernel(components: list[dict[str, Any]] | tuple[Any, ...], d: int):
    """The GPJax kernel ``k(x, y) = sum_c k_c(x, y)`` for inputs of dimension ``d``.

    Build it inside ``jax.enable_x64(True)`` to get float64 hyperparameters. Its
    ``cross_covariance(X, Y)`` maps ``(N, d), (M, d) -> (N, M)``.
    """
    import gpjax as gpx

    specs = parse_kernel(components, d)
    parts = [_gpjax_component(s, d) for s in specs]
    return parts[0] if len(parts) == 1 else gpx.kernels.SumKernel(kernels=parts)
