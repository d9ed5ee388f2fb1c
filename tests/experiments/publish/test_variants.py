"""The metric variants of docs/paper_disagreements.md (experiments.publish.variants):
the derived columns against independent computations (numpy's least squares, the full
risk-coverage curve of udora.scoring), the curves they read against the release's own
calibration metric, and a variant changing only what it names."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from udora.errors import UserError
from udora.experiments.publish import claims as rules
from udora.experiments.publish import disagreements as dis
from udora.experiments.publish import variants as var
from udora.experiments.publish.artefact import read_release, release_folder
from udora.experiments.publish.claim_data import ClaimData
from udora.experiments.publish.reproduction import evaluate
from udora.experiments.run.execute import _summarise
from udora.scoring.risk_coverage import risk_coverage_curve


@pytest.fixture(scope="module")
def release() -> tuple[pd.DataFrame, dict]:
    table, curves, _ = read_release(release_folder("release"))
    return dis.claim_rows(table), curves


def test_calibration_variants_against_least_squares_and_constructions():
    rng = np.random.default_rng(0)
    t = np.sort(rng.uniform(0.1, 3.0, 10))
    # a constant factor off: no shape error, slope 1
    shape, slope = var.calibration_variants(4.0 * t, t)
    assert shape == pytest.approx(0.0, abs=1e-12) and slope == pytest.approx(0.0, abs=1e-12)
    # t = sqrt(e): log t = 0.5 log e, slope 0.5
    assert var.calibration_variants(t**2, t)[1] == pytest.approx(0.5, abs=1e-12)
    # log ratios 1.2 +- 0.3 alternating: after the best rescaling each bin is 0.3 off
    e = t * np.exp(1.2 + 0.3 * (-1.0) ** np.arange(10))
    assert var.calibration_variants(e, t)[0] == pytest.approx(0.3, abs=1e-12)
    e = t * np.exp(rng.normal(0, 0.4, 10))
    fitted = np.polyfit(np.log(e), np.log(t), 1)[0]
    assert var.calibration_variants(e, t)[1] == pytest.approx(abs(1 - fitted), rel=1e-10)
    assert np.isnan(var.calibration_variants(np.r_[0.0, e[1:]], t)).all()
    assert np.isnan(var.calibration_variants(np.full(10, 2.0), t)[1])  # no spread: no slope


def test_retained_reduction_on_a_summary_against_the_full_curve():
    rng = np.random.default_rng(1)
    t = rng.gamma(2.0, 1.0, 1000)
    e = t + rng.normal(0, 1.0, 1000)
    coverage, retained = risk_coverage_curve(e, t)
    exact = 1 - retained[499] / retained[-1]  # coverage 500/1000
    s = _summarise({"c": coverage, "r": retained})
    value = var.retained_reduction(np.asarray(s["c"]), np.asarray(s["r"]))
    assert value == pytest.approx(exact, abs=2e-3)  # 101 summary points, interpolated
    assert var.retained_reduction(coverage, retained) == pytest.approx(exact, abs=1e-3)
    shuffled = rng.permutation(1000)
    cov, ret = risk_coverage_curve(shuffled.astype(float), t)  # an order unrelated to t
    assert abs(var.retained_reduction(cov, ret)) < 0.1


def test_the_curves_it_reads_give_the_release_calibration_metric(release):
    rows, curves = release
    out = var.derive(rows, curves)
    for u in ("eu", "au"):
        mean_abs = []
        for key in zip(rows["preset"], rows["method"], rows["config"], rows["seed"], strict=True):
            c = curves[key]
            est = np.array([np.nan if v is None else v for v in c[f"calib_{u}_estimate"]])
            tgt = np.array([np.nan if v is None else v for v in c[f"calib_{u}_target"]])
            with np.errstate(divide="ignore", invalid="ignore"):
                mean_abs.append(np.mean(np.abs(np.log(est / tgt))))
        have = rows[f"calib_abs_log_ratio_{u}"].to_numpy(dtype=float)
        both = np.isfinite(have) & np.isfinite(mean_abs)
        assert both.sum() > 500
        np.testing.assert_allclose(np.asarray(mean_abs)[both], have[both], rtol=1e-6, atol=1e-12)
        # the shape error is at most the error itself (|r - rbar| <= |r| + |rbar| on average)
        assert (out[f"calib_shape_{u}"][both] <= 2 * have[both] + 1e-12).all()
    assert (out["rr50_au_oracle"].dropna() >= out["rr50_au"].dropna() - 1e-9).all()


@pytest.mark.slow  # seconds each: in the slow set (CI runs it)
def test_a_variant_replaces_only_what_it_names(release):
    rows, curves = release
    table = var.derive(rows, curves)
    m1 = var.get_variant("m1")
    data, base = m1.data(table), ClaimData(table)
    np.testing.assert_array_equal(
        data.M("heldout", "nAURC_eu").to_numpy(),
        base.M("heldout", "nAURC_eu_realised").to_numpy(),
    )
    pd.testing.assert_series_equal(
        data.M("heldout", "spearman_eu"), base.M("heldout", "spearman_eu")
    )
    # the median summary is pandas' median of the per-preset seed means
    median = var.get_variant("M2c").data(table)
    pd.testing.assert_series_equal(
        median.M("heldout", "spearman_eu"), base.v("heldout", "spearman_eu").median(axis=0)
    )
    # a variant whose replacement equals the original changes no verdict
    same = var.Variant("same", "", ("C5",), columns={"nAURC_eu": "nAURC_eu"})
    assert [v.verdict for _, v in evaluate(table, same)] == [v.verdict for _, v in evaluate(table)]
    with pytest.raises(UserError, match="unknown variant 'm9'"):
        var.get_variant("m9")
    with pytest.raises(UserError, match="no column calib_shape_eu"):
        var.get_variant("M2a").apply(rows)


def test_c9_bullet_b_reads_the_column_it_is_given(release):
    rows, curves = release
    table = var.derive(rows, curves)
    low = table.assign(low=np.where(table["method"].isin(["edl", "swag"]), 0.0, 0.5))
    d = ClaimData(low)
    assert "low < 0.10: 2" in rules.c9(d, uninformative="low").ours
    assert "nAURC_au < 0.10: 0" in rules.c9(d).ours
    # bullet b alone moves: with c and d failing, the fallback needs b and one of c, d
    assert rules.c9(d, uninformative="low").verdict == rules.c9(d).verdict == "FAIL"


@pytest.mark.slow  # seconds each: in the slow set (CI runs it)
def test_the_command_judges_under_a_variant(tmp_path):
    from typer.testing import CliRunner

    from udora.experiments.cli.main import app

    args = ["release", "disagreements", "release", "--variant", "m3", "--claims", "c9"]
    out = CliRunner().invoke(app, [*args, "--boot", "2", "--inner", "10"])
    assert out.exit_code == 0, out.output
    assert "| claim | release | variant M3 | ours |" in out.output
    assert "| C1 | FAIL | - |" in out.output  # not a claim M3 bears on
    assert "rr50_au < 0.10: 0" in out.output
    assert "variant M3 (" in out.output
    bad = CliRunner().invoke(app, ["release", "disagreements", "release", "--variant", "x"])
    assert bad.exit_code != 0 and "unknown variant 'x'" in bad.output


def test_a_method_without_the_variant_quantity_is_an_error_not_skipped(release):
    rows, curves = release
    table = var.derive(rows, curves)
    # edl with no slope (say an estimate constant over the bins): C11 must not name
    # another method best by skipping edl
    gone = table.assign(
        calib_slope_eu=table["calib_slope_eu"].where(table["method"] != "edl", np.nan)
    )
    found = {c.id: v for c, v in evaluate(gone, var.get_variant("M2b"))}
    assert found["C11"].verdict == "ERROR" and "calib_abs_log_ratio_eu for edl" in found["C11"].ours
