"""Kernel Gram matrices against hand-written numpy formulas; clear spec errors."""

import jax
import numpy as np
import pytest
from numpy_kernels import numpy_kernel

from udora.oracle.gp import gram
from udora.oracle.kernels import KERNEL_TYPES, KernelSpecError, build_kernel, parse_kernel

D = 3
SPECS = [
    {"type": "rbf", "variance": 1.3, "lengthscale": [0.5, 1.0, 2.0]},
    {"type": "rbf", "variance": 0.7, "lengthscale": 1.4},
    {"type": "matern12", "variance": 0.6, "lengthscale": [0.7, 3.0, 1.1]},
    {"type": "matern32", "variance": 1.1, "lengthscale": [1.2, 0.4, 2.0]},
    {"type": "matern52", "variance": 0.9, "lengthscale": 0.8},
    {"type": "rational_quadratic", "variance": 0.35, "lengthscale": [0.3, 1.0, 2.4], "alpha": 1.0},
    {"type": "rational_quadratic", "variance": 1.0, "lengthscale": 1.0, "alpha": 2.5},
    {"type": "periodic", "variance": 0.4, "lengthscale": [0.5, 2.0, 1.0], "period": 1.0},
    {"type": "powered_exponential", "variance": 1.8, "lengthscale": [1.7, 4.1, 2.5], "power": 1.0},
    {"type": "powered_exponential", "variance": 1.0, "lengthscale": 1.0, "power": 1.5},
    {"type": "linear", "variance": 0.28},
    {"type": "arccosine", "variance": 2.0, "order": 0},
    {"type": "arccosine", "variance": 0.5, "order": 1, "weight_variance": [1.0, 0.5, 2.0]},
    {"type": "arccosine", "variance": 0.5, "order": 2, "bias_variance": 0.3},
]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s["type"])
def test_gram_matches_formula(spec):
    rng = np.random.default_rng(1)
    A, B = rng.normal(size=(17, D)), rng.normal(size=(11, D))
    with jax.enable_x64(True):
        kernel = build_kernel([spec], D)
    K = gram(kernel, A, B)
    assert K.dtype == np.float64 and K.shape == (17, 11)
    np.testing.assert_allclose(K, numpy_kernel(spec, A, B), rtol=1e-12, atol=1e-14)
    # The diagonal goes through r = 0 (GPJax floors the distance at 1e-18). For the
    # arc-cosine kernel cos(theta) = 1 there, and arccos turns the last-ulp rounding of
    # XLA's inner products into ~1e-9 relative, hence the looser tolerance for it.
    rtol = 1e-8 if spec["type"] == "arccosine" else 1e-12
    np.testing.assert_allclose(gram(kernel, A, A), numpy_kernel(spec, A, A), rtol=rtol)


def test_sum_of_components_is_sum_of_grams():
    rng = np.random.default_rng(2)
    A = rng.normal(size=(9, D))
    comps = [SPECS[2], SPECS[10]]
    with jax.enable_x64(True):
        kernel = build_kernel(comps, D)
    expected = numpy_kernel(comps[0], A, A) + numpy_kernel(comps[1], A, A)
    np.testing.assert_allclose(gram(kernel, A, A), expected, rtol=1e-12)


def test_unknown_type_lists_valid_types():
    with pytest.raises(KernelSpecError) as err:
        parse_kernel([{"type": "rbf", "variance": 1.0}, {"type": "sqexp", "variance": 1.0}], D)
    msg = str(err.value)
    assert "component 1" in msg and "'sqexp'" in msg
    assert all(t in msg for t in KERNEL_TYPES)


def test_wrong_lengthscale_length_names_component_and_d():
    with pytest.raises(KernelSpecError, match=r"component 0 \(matern32\).*length 2.*d=3"):
        parse_kernel([{"type": "matern32", "variance": 1.0, "lengthscale": [1.0, 2.0]}], D)
    with pytest.raises(KernelSpecError, match=r"arccosine.*weight_variance.*d=3"):
        parse_kernel([{"type": "arccosine", "variance": 1.0, "weight_variance": [1.0, 1.0]}], D)


@pytest.mark.parametrize(
    ("comp", "fragment"),
    [
        ({"type": "rbf", "variance": -1.0}, "variance"),
        ({"type": "rbf", "variance": 1.0, "lengthscale": [1.0, 0.0, 1.0]}, "lengthscale"),
        ({"type": "rbf", "variance": 1.0, "period": 2.0}, "period"),
        ({"type": "powered_exponential", "variance": 1.0, "power": 3.0}, "power"),
    ],
)
def test_bad_hyperparameters_are_named(comp, fragment):
    with pytest.raises(KernelSpecError, match=fragment):
        parse_kernel([comp], D)
