"""The paper-reproduction rules (udora.experiments.publish.claims) on synthetic release
tables: verdicts that follow from how the table was built, Kendall's W against its
textbook formula, the NLL-vs-EU tau against pandas' Kendall, INCOMPLETE for a missing
method, and `udora release claims` end to end."""

from __future__ import annotations

import gzip
import hashlib
import json
from functools import cache

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from udora.experiments.cli.main import app
from udora.experiments.publish import claims
from udora.experiments.publish.claim_data import P14, ClaimData, w_and_friedman
from udora.experiments.publish.reproduction import CLAIMS, evaluate


def synthetic(seed=0, drop=None, lift=0.0):
    rng = np.random.default_rng(seed)
    methods = (*P14, "gp_oracle", "gp_linear", "deup_unbiased")
    skill = {m: rng.uniform(0.1, 0.6) - lift for m in methods}
    skill["nn_ensemble"], skill["nn_bagging"], skill["gp_oracle"] = 0.62, 0.6, 1.0
    rows = []
    for suite in ("dev", "heldout"):
        for p in range(7):
            pe = rng.normal(0, 0.1)
            for s in (0, 1, 2):
                for m in methods:
                    if drop and (m, p, suite) == drop:
                        continue
                    eu = 1.0 if m == "gp_oracle" else skill[m] + pe + rng.normal(0, 0.05)
                    au = (
                        np.nan
                        if m in ("blr", "dkl", "deup", "catboost_kgb")
                        else (1.0 if m == "gp_oracle" else rng.uniform(0, 0.6))
                    )
                    rows.append(
                        dict(
                            preset=f"{suite[0]}{p}",
                            suite=suite,
                            method=m,
                            config=m if m.startswith("gp") else f"{m}@tuned",
                            seed=s,
                            status="ok",
                            spearman_eu=eu,
                            spearman_au=au,
                            spearman_total=1.0 if m == "gp_oracle" else eu,
                            spearman_mean_f=0.85 + rng.normal(0, 0.02) - (0.1 if m == "blr" else 0),
                            spearman_eu_var=eu + 0.05,
                            spearman_eu_bias=eu - 0.3,
                            nAURC_eu=eu * 0.8,
                            nAURC_au=(au * 0.5 if au == au else 0.0),
                            calib_log_ratio_eu=-0.5 + rng.normal(0, 0.1),
                            calib_abs_log_ratio_eu=abs(-0.5 + rng.normal(0, 0.3)),
                            calib_log_ratio_au=0.3 + rng.normal(0, 0.1),
                            calib_abs_log_ratio_au=0.3 + abs(rng.normal(0, 0.3)),
                            nll=-eu + rng.normal(0, 0.3),
                            crps=-eu + rng.normal(0, 0.3),
                            data_kind="file",
                        )
                    )
    return pd.DataFrame(rows)


@cache
def verdicts(**kw) -> dict:
    return {c.id: v for c, v in evaluate(synthetic(**kw))}


def test_every_claim_has_a_verdict_and_the_gp_ceiling_holds():
    found = verdicts()
    assert list(found) == [c.id for c in CLAIMS] and len(found) == 15
    assert {v.verdict for v in found.values()} <= {"PASS", "PARTIAL", "FAIL"}
    assert found["C2"].ours.startswith("gp_oracle min 1.0000")
    assert found["C3"].verdict == "PASS"  # nn_ensemble and nn_bagging built the strongest
    assert found["C10"].verdict == "PASS"  # var = EU + 0.05, bias = EU - 0.3 by construction
    assert found["C13"].verdict == "PASS"  # mean-vs-f around 0.85


def test_c2_turns_on_how_far_the_methods_are_from_the_oracle():
    low = verdicts(lift=0.15)
    d = ClaimData(synthetic(lift=0.15))
    eu = d.M("heldout", "spearman_eu")
    expected = eu.max() <= 0.75 and (eu < 0.5).sum() >= 10 and eu.median() < 0.40
    assert (low["C2"].verdict == "PASS") == expected and expected


def test_kendalls_w_and_friedman_match_their_formulas():
    from scipy.stats import friedmanchisquare

    v = ClaimData(synthetic()).v("heldout", "spearman_eu")
    w, p = w_and_friedman(v)
    r = v.rank(axis=1).to_numpy()
    m, n = r.shape  # raters (presets), items (methods)
    s = ((r.sum(axis=0) - m * (n + 1) / 2) ** 2).sum()
    assert w == pytest.approx(12 * s / (m**2 * (n**3 - n)), rel=1e-12)
    assert p == pytest.approx(friedmanchisquare(*v.T.to_numpy()).pvalue, rel=1e-12)


def test_the_nll_tau_is_pandas_kendall_over_cells():
    d = ClaimData(synthetic())
    t = d.table[(d.table["suite"] == "heldout") & d.table["method"].isin(P14)]
    per = t.groupby(["preset", "seed"]).apply(
        lambda g: (-g["nll"]).corr(g["spearman_eu"], method="kendall"), include_groups=False
    )
    tau, _ = claims._tau(d, "nll")
    assert tau == pytest.approx(per.groupby("preset").mean().mean(), rel=1e-12)


def test_a_missing_method_makes_its_claims_incomplete():
    found = verdicts(drop=("swag", 2, "dev"))
    assert found["C1"].verdict == "INCOMPLETE" and "swag" in found["C1"].ours
    assert found["C3"].verdict != "INCOMPLETE"  # it reads nn_ensemble and nn_bagging only


def test_release_claims_writes_the_page(tmp_path):
    folder = tmp_path / "rel"
    folder.mkdir()
    synthetic().to_parquet(folder / "results.parquet", index=False)
    (folder / "curves.json.gz").write_bytes(gzip.compress(b"[]", mtime=0))
    files = {
        n: hashlib.sha256((folder / n).read_bytes()).hexdigest()
        for n in ("results.parquet", "curves.json.gz")
    }
    (folder / "manifest.json").write_text(json.dumps({"commit": "feed", "ok": 100, "files": files}))
    out = CliRunner().invoke(app, ["release", "claims", str(folder), "--docs", str(tmp_path)])
    assert out.exit_code == 0, out.output
    text = (tmp_path / "paper_reproduction.md").read_text()
    assert "Release commit `feed`" in text and "| C15 | §7 |" in text
    assert text.count("| **") == 15
    assert all(line.count("|") == 7 for line in text.splitlines() if line.startswith("| C"))
    assert "## Why they disagree" in text  # each failing claim's bullet: the test below
    rules = CliRunner().invoke(
        app, ["release", "claims", "--rules-only", "--docs", str(tmp_path / "r")]
    )
    assert rules.exit_code == 0, rules.output
    assert (tmp_path / "r" / "paper_reproduction.md").read_text().count("**not scored**") == 15


def test_every_claim_the_release_fails_has_its_diagnosis_on_the_page(tmp_path):
    """docs/paper_reproduction.md's "Why" section: one bullet per FAIL or PARTIAL claim
    with its entry of diagnosis.WHY (a claim without one is shown as open, not left out),
    then the observations; the ids of WHY are claims of the page."""
    from udora.experiments.publish.diagnosis import OBSERVATIONS, WHY, why_lines
    from udora.experiments.publish.reproduction import CLAIMS

    assert set(WHY) <= {claim.id for claim in CLAIMS}
    lines = why_lines([("C1", "FAIL"), ("C2", "PASS"), ("C5", "PARTIAL"), ("C99", "FAIL")])
    assert lines[0].startswith(f"- **C1 (FAIL)**: {WHY['C1'].status}. {WHY['C1'].text}")
    assert lines[0].endswith(f"(docs/paper_disagreements.md, {WHY['C1'].section})")
    assert not any("C2" in line for line in lines)  # a passing claim needs no diagnosis
    assert lines[2] == "- **C99 (FAIL)**: open. Not diagnosed yet."
    assert len(lines) == 3 + len(OBSERVATIONS) and lines[3].startswith("- **O1: ")
    assert all(w.status in ("defect fixed", "finding", "explained", "open") for w in WHY.values())


@pytest.mark.slow  # seconds each: in the slow set (CI runs it)
def test_the_committed_page_regenerates_from_the_shipped_release(tmp_path):
    """docs/paper_reproduction.md is `udora release claims release --docs docs` of the
    shipped release and the committed diagnoses, byte for byte."""
    from pathlib import Path

    from udora.experiments.publish.artefact import release_folder
    from udora.experiments.publish.reproduction import write_reproduction

    docs = Path(__file__).resolve().parents[3] / "docs"
    command = "udora release claims release --docs docs"
    page = write_reproduction(release_folder("release"), tmp_path, command)
    assert page.read_text() == (docs / "paper_reproduction.md").read_text()
