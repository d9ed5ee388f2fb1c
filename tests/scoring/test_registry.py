"""The metric registry against what computes and documents the metrics: the scorer's keys
and docs/metrics.md name exactly the registered metrics, each declared need is one the
scorer's values show (what a metric does not read cannot move it), the roles are complete
orders and the goodness is the documented transform."""

import re
from pathlib import Path
from typing import get_args

import numpy as np
import pandas as pd
import pytest

from udora.scoring import Metric, metric, observable_arrays, score_arrays
from udora.scoring import registry as reg
from udora.scoring.declaration import Role

DOCS = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"


def _arrays(n=300, seed=0, k=5):
    """A stand-in task and a member prediction of it, every metric finite."""
    rng = np.random.default_rng(seed)
    f = rng.normal(size=n) * 2.0 + 3.0
    noise_var = rng.uniform(0.2, 1.5, size=n)
    post_var = rng.gamma(2.0, size=n) * 0.3
    post_mean = f + np.sqrt(post_var) * rng.normal(size=n)
    y = f + np.sqrt(noise_var) * rng.normal(size=n)
    members = post_mean + np.sqrt(post_var) * rng.normal(size=(k, n)) + 0.1 * rng.normal(size=n)
    task = {"f": f, "y": y, "noise_var": noise_var, "post_mean": post_mean, "post_var": post_var}
    task |= _batches(rng, post_var)
    pred = {
        "mean": members.mean(axis=0),
        "aleatoric": noise_var * rng.uniform(0.5, 1.5, size=n),
        "epistemic": members.var(axis=0),
        "member_means": members,
    }
    return task, pred


def _batches(rng, post_var, per_design=10, tau=4):
    """Joint batches of the three designs over a posterior covariance with diagonal
    ``post_var`` (a correlation from random features)."""
    n = post_var.shape[0]
    F = rng.normal(size=(n, 3))
    R = F @ F.T + np.eye(n)
    R /= np.sqrt(np.outer(np.diag(R), np.diag(R)))
    C = R * np.sqrt(np.outer(post_var, post_var))
    idx = rng.integers(0, n, size=(3 * per_design, tau))
    return {
        "joint_idx": idx,
        "joint_design": np.repeat(np.arange(3), per_design),
        "joint_post_cov": C[idx[:, :, None], idx[:, None, :]],
    }


def _documented() -> set[str]:
    """Every metric name docs/metrics.md lists: the first cell of each table headed
    ``name`` (the curves' table excepted) and the block scores' bullets."""
    text = DOCS.read_text()
    found: set[str] = set()
    for section in re.split(r"^## ", text, flags=re.M)[1:]:
        if section.startswith("Curves"):
            continue
        first = None
        for line in section.splitlines():
            if not line.startswith("|"):
                first = None
                continue
            cell = line.split("|")[1].strip()
            if first is None:
                first = cell
            elif first == "name" and not set(cell) <= set("-: "):
                found |= set(re.findall(r"`(\w+)`", cell))
        found |= set(re.findall(r"^- `(\w+)` = ", section, flags=re.M))
    return found


def test_the_scorer_returns_exactly_the_registered_regression_metrics():
    task, pred = _arrays()
    scores = score_arrays(**task, **pred)
    assert set(scores) - set(reg.scored()) == set(), "scored but not registered"
    assert set(reg.scored()) - set(scores) == set(), "registered but not scored"
    assert len(reg.scored()) == len(set(reg.scored()))  # one declaration per name
    assert np.all(np.isfinite(list(scores.values())))
    # the block scores are the one family the scorer leaves to `udora meta`
    joint = {m.name for m in reg.metrics() if "joint" in m.needs}
    assert joint == {"energy_score_block", "variogram_score_block"}
    # and the acquisition metrics, computed when asked for (udora.scoring.acquisition)
    from udora.scoring.acquisition import acquisition_names

    acquisition = {m.name for m in reg.metrics() if "acquisition" in m.needs}
    assert acquisition == set(acquisition_names())
    assert set(reg.names()) == set(reg.scored()) | joint | acquisition


def test_docs_name_exactly_the_registered_metrics():
    from udora.experiments.tasks.kinds import run_kind_names

    documented = _documented()
    registered = {n for kind in run_kind_names() for n in reg.names(kind)}
    assert len(documented) > 70  # the parser found the tables
    assert documented - registered == set(), "documented but not registered"
    assert registered - documented == set(), "registered but not documented"


def test_the_observable_scorer_computes_the_metrics_that_need_no_oracle():
    task, pred = _arrays(seed=1)
    seen = observable_arrays(y=task["y"], **pred)
    no_oracle = {n for n in reg.scored() if "oracle" not in metric(n).needs}
    assert set(seen) == no_oracle


def _moved(a: dict[str, float], b: dict[str, float]) -> set[str]:
    return {k for k in a if not np.isclose(a[k], b[k], rtol=1e-12, atol=0, equal_nan=True)}


def test_what_a_metric_does_not_need_cannot_move_it():
    """Change one input at a time; the metrics that move are the ones that declare it."""
    task, pred = _arrays(seed=2)
    base = score_arrays(**task, **pred)
    rng = np.random.default_rng(7)
    n = task["f"].shape[0]

    def declared(*needs):
        return {k for k in base if set(needs) & metric(k).needs}

    # the oracle's arrays replaced by unrelated ones
    other = {k: rng.normal(size=n) for k in ("f", "post_mean")}
    other |= {k: rng.uniform(0.1, 1.0, size=n) for k in ("noise_var", "post_var")}
    other["joint_post_cov"] = _batches(rng, other["post_var"])["joint_post_cov"]
    moved = _moved(base, score_arrays(**{**task, **other}, **pred))
    assert moved == declared("oracle")
    # the same total split otherwise (a fifth of it aleatoric, the rest epistemic)
    total = pred["aleatoric"] + pred["epistemic"]
    resplit = {**pred, "aleatoric": 0.2 * total, "epistemic": 0.8 * total, "total": total}
    assert _moved(base, score_arrays(**task, **resplit)) == declared("split")
    # the total made v (2 + v^2), the same order, split in the same proportions: only what
    # reads its values moves. The AURC is rank-based but declared to read the values, as
    # the quantiles form has never been given it (scoring/registry.py).
    scale = 2.0 + total**2
    same_order = {k: pred[k] * scale for k in ("aleatoric", "epistemic")}
    moved = _moved(base, score_arrays(**task, **{**pred, **same_order}))
    assert moved == declared("total", "gaussian", "split") - {"aurc_total"}
    # without members
    without = score_arrays(**task, **{**pred, "member_means": None})
    # the members are this prediction's only covariance (no predict_joint)
    assert {k for k in without if np.isnan(without[k])} == declared("members", "covariance")
    assert declared("covariance") == {m for m in base if m.startswith("joint_")}
    # one aleatoric variance at every point (a homoscedastic method): only what needs a
    # varying AU is undefined, the AU's other metrics are still scored
    flat = {**pred, "aleatoric": np.full(n, 0.7)}
    constant = score_arrays(**task, **flat)
    assert {k for k in constant if np.isnan(constant[k])} == declared("varying_au")
    assert declared("varying_au") == {"spearman_au", "pearson_au"}


def test_each_role_is_one_complete_order():
    from udora.experiments.tasks.kinds import run_kind_names

    for kind in run_kind_names():  # of each task kind: shared metrics keep their places
        for role in get_args(Role):
            positions = sorted(m.roles[role] for m in reg.metrics(kind, role=role))
            assert positions == list(range(len(positions))), (kind, role)
        assert reg.names(kind, role="ranked")[0] == "spearman_eu"
    assert reg.names(role="ranked")[0] == "spearman_eu"  # the primary metric
    for m in reg.metrics(role="ranked") + reg.metrics(role="leaderboard"):
        assert m.better in ("higher", "lower"), m.name  # what a ranking can sort by
    for m in reg.metrics(role="observable"):
        assert "oracle" not in m.needs, m.name
    for m in reg.metrics(role="oracle"):
        assert "oracle" in m.needs, m.name


def test_goodness_is_the_documented_transform():
    values = pd.Series([0.3, 0.5, 0.95, 1.7])
    assert list(metric("spearman_eu").goodness(values)) == [0.3, 0.5, 0.95, 1.7]
    assert list(metric("nll").goodness(values)) == [-0.3, -0.5, -0.95, -1.7]
    np.testing.assert_allclose(metric("coverage_90").goodness(values), [-0.6, -0.4, -0.05, -0.8])
    ratio = metric("spread_skill").goodness(values)
    np.testing.assert_allclose(ratio, -np.abs(np.log([0.3, 0.5, 0.95, 1.7])))
    assert ratio[0] < ratio[1] < ratio[2] and ratio[3] < ratio[2]  # 1 is best, both sides
    assert metric("coverage_50").goodness_name == "coverage_error_50"


def test_a_bad_declaration_or_name_is_refused():
    with pytest.raises(ValueError, match="ideal"):
        Metric("x", "x", "1", "higher", frozenset(), ideal=1.0)
    with pytest.raises(ValueError, match="ideal"):
        Metric("x", "x", "1", "closest", frozenset())
    with pytest.raises(ValueError, match="log"):
        Metric("x", "x", "1", "closest", frozenset(), ideal=0.0, log=True)
    with pytest.raises(KeyError, match="spearman_eu"):  # the known names are listed
        metric("spearman_eu_bais")
