"""Strict JAX under test: silent rank promotion ((n,1) - (n,) -> (n,n)) raises.

One persistent compilation cache serves the whole test session, both xdist workers and
the ``udora`` processes they start (``experiments.run.jax_cache``): the folder
``$UDORA_JAX_CACHE`` names (CI sets it; ``off`` turns it off), else a fresh temporary
folder removed at the end, so a test run never writes to the user's own cache. Compiled
programs then cost once per session, not once per process.
"""

import os
import shutil
import tempfile

import jax
import pytest
from tiny_presets import one_tiny_preset

from udora.experiments.grid.workers import release_if_crowded
from udora.experiments.run.jax_cache import configure_compilation_cache

jax.config.update("jax_numpy_rank_promotion", "raise")
_OWN_CACHE = "UDORA_TEST_OWN_JAX_CACHE"


def pytest_configure(config):
    # xdist workers inherit the controller's environment, so they share its folder
    if "UDORA_JAX_CACHE" not in os.environ:
        os.environ["UDORA_JAX_CACHE"] = os.environ[_OWN_CACHE] = tempfile.mkdtemp(
            prefix="udora-test-jax-"
        )
    configure_compilation_cache()


def pytest_unconfigure(config):
    if os.environ.get(_OWN_CACHE) and not os.environ.get("PYTEST_XDIST_WORKER"):
        shutil.rmtree(os.environ[_OWN_CACHE], ignore_errors=True)


@pytest.fixture(autouse=True)
def _release_compiled_programs():
    """After each test, drop the compiled programs once this process's memory mappings pass
    half the kernel's limit (:func:`udora.experiments.grid.workers.release_if_crowded`, as
    a bench worker does between runs): every program XLA compiles keeps mappings while a
    cache holds it, and the slow set's one process reached ``vm.max_map_count`` (65,530)
    after a few thousand compiles, when the next compile segfaulted."""
    yield
    release_if_crowded()


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


@pytest.fixture
def tiny_preset(tmp_path):
    """(path to a tiny preset YAML, its data folder): 120-point pool, 40 training points
    (:func:`tiny_presets.one_tiny_preset`)."""
    return one_tiny_preset(tmp_path)
