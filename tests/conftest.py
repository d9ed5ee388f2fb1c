"""Strict JAX under test: silent rank promotion ((n,1) - (n,) -> (n,n)) raises."""

import jax
import pytest

jax.config.update("jax_numpy_rank_promotion", "raise")


@pytest.fixture
def x64():
    """Run a test body in float64 (the oracle's precision)."""
    with jax.enable_x64(True):
        yield
