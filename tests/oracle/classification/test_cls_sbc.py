"""Simulation-based calibration of the NUTS posterior sampler (slow: ~6 minutes).

1000 replications at 20 training inputs with 2 labels each (40 labels), 99 draws thinned
by 4 after 300 warm-up steps; chi-squared on 20 bins of the ranks, alpha = 0.001 per
statistic, seed fixed (sbc.py). The same test must reject two negative controls: the
posterior with the prior's amplitude doubled inside the sampler, and the Laplace
approximation at a large amplitude (prior variance 16), where the probit and softmax
posteriors are far from Gaussian.
"""

import pytest
import sbc

ALPHA = 0.001
pytestmark = pytest.mark.slow


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
