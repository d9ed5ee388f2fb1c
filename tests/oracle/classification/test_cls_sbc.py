"""Simulation-based calibration of the NUTS posterior sampler (slow: ~6 minutes).

1000 replications at 20 training inputs with 2 labels each (40 labels), 99 draws thinned
by 4 after 300 warm-up steps; chi-squared on 20 bins of the ranks, alpha = 0.001 per
statistic, seed fixed (sbc.py). The same test must reject two negative controls: the
posterior with the prior's amplitude doubled inside the sampler, and the Laplace
approximation at a large amplitude (prior variance 16), where the probit and softmax
posteriors are far from Gaussian.
"""

import jax
import pytest
import sbc

ALPHA = 0.001
pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _no_persistent_cache():
    """The 1000-replication programs are compiled without the session's persistent cache:
    writing one of them aborted the process once inside jaxlib 0.10.2's cache writer
    (``put_executable_and_time``, a C++ abort, not an exception), and each is compiled
    once per session anyway. No program compiles for 1e9 s, so none is written; the
    threshold is restored afterwards (``jax_enable_compilation_cache`` is read once per
    process, so switching it off here would not stop the writes)."""
    name = "jax_persistent_cache_min_compile_time_secs"
    before = getattr(jax.config, name)
    jax.config.update(name, 1e9)
    yield
    jax.config.update(name, before)


@pytest.mark.parametrize("n_classes", [2, 3], ids=["binary", "three-class"])
def test_ranks_are_uniform(n_classes):
    p = sbc.p_values(sbc.run(1000, n_classes))
    assert min(p.values()) > ALPHA, p


@pytest.mark.parametrize("n_classes", [2, 3], ids=["binary", "three-class"])
@pytest.mark.parametrize(
    "control",
    [{"sampler_scale": 2.0}, {"variance": 16.0, "laplace": True}],
    ids=["amplitude-doubled", "laplace-at-large-amplitude"],
)
def test_negative_controls_are_rejected(n_classes, control):
    p = sbc.p_values(sbc.run(1000, n_classes, **control))
    assert min(p.values()) < ALPHA, p
