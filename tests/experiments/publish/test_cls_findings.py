"""The classification findings' rules (udora.experiments.publish.cls_findings) on synthetic
release tables whose answers follow from how they were built: a ranking copied from the
regression table carries over and a reversed one does not (tau against scipy on the mean
ranks), MI-tracking estimates are named as such, and the carried regression conclusions
pass or fail as constructed."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau

from udora.experiments.publish import cls_findings as cf
from udora.experiments.publish.claim_data import ClaimData


def cls_table(skill, *, seed=0, mi_gap=0.3, nll_follows_eu=False):
    """A classification release table: each method's EU Spearman its ``skill`` plus preset
    and seed noise; the MI part's Spearman ``mi_gap`` above the discrepancy part's."""
    rng = np.random.default_rng(seed)
    rows = []
    for suite in (cf.CD, cf.CH):
        for p in range(7):
            shift = rng.normal(0, 0.05)
            for s in (0, 1, 2):
                for m in (*cf.RANKED, "gp_oracle", "gp_approx"):
                    eu = 0.999 if m == "gp_oracle" else skill.get(m, 0.3) + shift
                    eu += 0 if m == "gp_oracle" else rng.normal(0, 0.02)
                    rows.append(
                        dict(
                            preset=f"{suite}-{p}",
                            suite=suite,
                            method=m,
                            config=m if m.startswith("gp") else f"{m}@tuned",
                            seed=s,
                            status="ok",
                            spearman_eu=eu,
                            spearman_au=rng.uniform(0.3, 0.9),
                            spearman_eu_mi=eu + mi_gap / 2,
                            spearman_eu_kl=eu - mi_gap / 2,
                            nAURC_eu=eu,
                            nll=-eu if nll_follows_eu else rng.normal(0, 1),
                            brier=-eu if nll_follows_eu else rng.normal(0, 1),
                        )
                    )
    return pd.DataFrame(rows)


def reg_table(skill, seed=1):
    rng = np.random.default_rng(seed)
    rows = []
    for suite in ("dev", "heldout"):
        for p in range(7):
            for s in (0, 1, 2):
                for m in (*cf.SHARED, *cf.TWINS, "dkl"):
                    rows.append(
                        dict(
                            preset=f"{suite}-{p}",
                            suite=suite,
                            method=m,
                            config=f"{m}@tuned",
                            seed=s,
                            status="ok",
                            spearman_eu=skill.get(m, 0.3) + rng.normal(0, 0.02),
                        )
                    )
    return pd.DataFrame(rows)


NAMES = [*cf.SHARED, *cf.TWINS.values()]
SPREAD = {m: 0.1 + 0.05 * i for i, m in enumerate(NAMES)}


def test_a_ranking_that_carries_over_and_one_that_does_not():
    cls = ClaimData(cls_table(SPREAD))
    same = {next((r for r, c in cf.TWINS.items() if c == m), m): v for m, v in SPREAD.items()}
    assert cf.q1(cls, ClaimData(reg_table(same))).verdict == "carries over"
    reversed_ = {m: -v for m, v in same.items()}
    verdict = cf.q1(cls, ClaimData(reg_table(reversed_)))
    assert verdict.verdict == "does not carry over"
    tau = float(verdict.ours.split()[1])
    assert tau == pytest.approx(kendalltau(range(11), range(11)[::-1]).statistic, abs=0.1)


def test_the_tau_is_scipys_on_the_mean_ranks():
    a = pd.DataFrame(np.random.default_rng(2).normal(size=(6, 4)), columns=list("abcd"))
    b = pd.DataFrame(np.random.default_rng(3).normal(size=(5, 4)), columns=list("abcd"))
    tau, lo, hi = cf._tau_ci(a, b, seed=0)
    ra, rb = a.rank(axis=1, ascending=False).mean(), b.rank(axis=1, ascending=False).mean()
    assert tau == pytest.approx(kendalltau(ra, rb).statistic, abs=1e-12)
    assert lo <= tau <= hi


def test_mi_estimates_that_track_the_mi_part():
    strong = {m: 0.8 for m in cf.RANKED}
    verdict = cf.q2(ClaimData(cls_table(strong, mi_gap=0.3)))
    assert verdict.verdict == "strongly; mostly the MI part"
    weak_kl = cf.q2(ClaimData(cls_table({m: 0.2 for m in cf.RANKED}, mi_gap=-0.3)))
    assert weak_kl.verdict == "weakly; mostly the discrepancy part"
    assert "deup" not in weak_kl.ours


def test_carried_conclusions_pass_and_fail_as_built():
    far = {m: 0.2 for m in cf.RANKED} | {"nn_ensemble": 0.45, "nn_bagging": 0.44}
    table = cls_table(far)
    _, verdicts = cf.q3(ClaimData(table))
    assert verdicts["C2"].verdict == "PASS"  # the oracle far above, all below 0.5
    assert verdicts["C3"].verdict == "PASS" and verdicts["C4"].verdict == "PASS"
    assert verdicts["C14"].verdict == "PASS"  # log loss unrelated to EU here
    aligned = cf.q3(ClaimData(cls_table(SPREAD | far, nll_follows_eu=True)))[1]
    assert aligned["C14"].verdict == "FAIL"
    assert {c.id for c in cf.CARRIED} == {"C2", "C3", "C4", "C6", "C7", "C8", "C14"}


def test_the_committed_page_states_these_rules():
    """docs/classification.md's questions and rules are the ones in the code (generated by
    its own command; the answers, once a release is scored, follow them)."""
    from pathlib import Path

    page = (Path(__file__).resolve().parents[3] / "docs" / "classification.md").read_text()
    rules = cf.findings_page(None, None, "x").split("## Questions and rules")[1]
    rules = rules.split("No classification release")[0]
    assert rules in page


def test_a_method_missing_on_a_preset_makes_the_answers_incomplete():
    table = cls_table(SPREAD)
    gone = table[~((table["method"] == "edl") & (table["preset"] == f"{cf.CH}-3"))]
    d = ClaimData(gone)
    assert cf.q2(d).verdict == "INCOMPLETE" and "edl" in cf.q2(d).ours
    assert cf.q3(d)[0].verdict == "INCOMPLETE"
    assert cf.q1(d, ClaimData(reg_table(SPREAD))).verdict == "INCOMPLETE"
    # a suite with no presets at all (a release of other presets) is no evidence either
    dev_only = ClaimData(table[table["suite"] == cf.CD])
    assert cf.q2(dev_only).verdict == "INCOMPLETE"
    assert cf.q3(dev_only)[0].verdict == "INCOMPLETE"
