"""Strict JAX under test: silent rank promotion ((n,1) - (n,) -> (n,n)) raises."""

import jax
import pytest

jax.config.update("jax_numpy_rank_promotion", "raise")


@pytest.fixture
def x64():
    """Run a test body in float64 (the oracle's precision)."""
    with jax.enable_x64(True):
        yield


@pytest.fixture(scope="session")
def shared_data():
    """The real data folder: $UDORA_DATA_DIR (CI sets it), else the project's ../shared/data."""
    import os
    from pathlib import Path

    env = os.environ.get("UDORA_DATA_DIR")
    folder = Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "data"
    if not (folder / "concrete.csv.gz").is_file():
        pytest.skip(f"real data not found at {folder}; set UDORA_DATA_DIR")
    return folder
