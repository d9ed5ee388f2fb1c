"""Ablation statistics against independent computations on synthetic run tables.

Slopes and their errors against scipy's linregress, significance against a t interval,
shifts against numpy, Kendall's W against the mean pairwise Spearman identity, the paired
sign test against scipy's binomtest. No model is fitted: the tables are built by hand.
"""

import itertools

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from udora.experiments.results.sections import markdown_table as _md
from udora.experiments.studies import analysis as ablation
from udora.experiments.studies import figures as figs
from udora.experiments.studies import section as study_report

pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")

METHODS = ("m1", "m2", "m3", "m4")
PRESETS = ("p1", "p2", "p3")
WIDTHS = (16, 32, 64, 128)
TREND = {"m1": -0.06, "m2": -0.005, "m3": 0.0, "m4": 0.04}  # per log2(width)


def _row(method, preset, seed, factor, level, default, **metrics):
    return {
        "preset": preset,
        "method": method,
        "config": f"{method}[{factor}={level}]",
        "config_hash": f"{method}-{preset}-{level}",
        "seed": seed,
        "status": "ok",
        "error": None,
        "run_dir": "",
        factor: None if level == default else level,
        **metrics,
    }


def _width_table():
    """Width runs: EU Spearman linear in log2(width) plus seeded noise; m4's AU Spearman
    is undefined (NaN); width 64 is the default, its cells left empty as in load_runs."""
    rng = np.random.default_rng(7)
    rows = []
    for p, (m, preset) in enumerate(itertools.product(METHODS, PRESETS)):
        base = rng.uniform(0.2, 0.6)
        for w, seed in itertools.product(WIDTHS, (0, 1)):
            eu = base + TREND[m] * np.log2(w) + rng.normal(0, 0.03)
            au = np.nan if m == "m4" else 0.5 - 0.03 * np.log2(w) + rng.normal(0, 0.05)
            rows.append(
                _row(
                    m,
                    preset,
                    seed,
                    "width",
                    w,
                    64,
                    spearman_eu=eu,
                    spearman_au=au,
                    spearman_mean_f=0.8 + 0.01 * p + rng.normal(0, 0.01),
                )
            )
    rows.append({**rows[0], "status": "failed", "width": 999.0, "spearman_eu": np.nan})
    table = pd.DataFrame(rows)
    table["width"] = table["width"].astype(float)  # None -> NaN, 16 -> 16.0, like load_runs
    return table


def _linregress_by_cell(table, metric):
    """{(method, preset): linregress result} on log2 width, every finite ok run."""
    ok = table[(table["status"] == "ok") & table[metric].notna()]
    x = np.log2(ok["width"].fillna(64).to_numpy())
    out = {}
    for key, idx in ok.groupby(["method", "preset"]).indices.items():
        out[key] = stats.linregress(x[idx], ok[metric].to_numpy()[idx])
    return out


def test_slopes_and_significance_match_linregress_and_t_interval():
    table = _width_table()
    got = ablation.slopes(table, "width", WIDTHS, "log2", "spearman_eu", default_level=64)
    ref = _linregress_by_cell(table, "spearman_eu")
    assert len(got) == len(METHODS) * len(PRESETS)
    for key, fit in ref.items():
        row = got.loc[key]
        assert row["slope"] == pytest.approx(fit.slope, rel=1e-10)
        assert row["stderr"] == pytest.approx(fit.stderr, rel=1e-10)
        assert row["n"] == 8
        upper = fit.slope + stats.t.ppf(0.975, 8 - 2) * fit.stderr
        assert row["significant_negative"] == (fit.slope < 0 and upper < 0)
    assert got["significant_negative"].any() and not got["significant_negative"].all()


def test_shares_count_valid_pairs_and_keep_undefined_slopes():
    table = _width_table()
    got = ablation.slopes(table, "width", WIDTHS, "log2", "spearman_au", default_level=64)
    assert got.loc["m4"]["slope"].isna().all()  # kept, NaN
    assert (got.loc["m4"]["n"] == 0).all()
    ref = _linregress_by_cell(table, "spearman_au")
    fits = list(ref.values())
    upper = [f.slope + stats.t.ppf(0.975, 6) * f.stderr for f in fits]
    shares = ablation.slope_shares(got)
    assert shares["pairs"] == len(fits) == 9
    assert shares["negative"] == pytest.approx(sum(f.slope < 0 for f in fits) / 9)
    assert shares["significant_negative"] == pytest.approx(np.mean(np.array(upper) < 0))
    assert shares["mean_slope"] == pytest.approx(np.mean([f.slope for f in fits]))
    by_method = ablation.method_slopes(got)
    m1 = [ref[("m1", p)].slope for p in PRESETS]
    assert by_method.loc["m1", "mean_slope"] == pytest.approx(np.mean(m1))
    assert by_method.loc["m4", "pairs"] == 0


def _known_table(interaction):
    """3 levels, 2 x 2 complete cells with v = a + b_l + c d_l (seeds at +-0.01 around it)
    and one cell lacking level 32. Returns (table, b, V (4, 3) of the complete cells)."""
    a = {("m1", "p1"): 0.1, ("m1", "p2"): 0.4, ("m2", "p1"): -0.2, ("m2", "p2"): 0.3}
    c = {("m1", "p1"): 1.0, ("m1", "p2"): -2.0, ("m2", "p1"): 0.5, ("m2", "p2"): 3.0}
    b, d = np.array([0.05, -0.02, 0.09]), np.array([0.01, 0.0, -0.03]) * interaction
    V = np.array([[a[k] + b[j] + c[k] * d[j] for j in range(3)] for k in a])
    rows = [
        _row(m, p, s, "width", w, 64, spearman_eu=V[i, j] + (0.01 if s else -0.01))
        for i, (m, p) in enumerate(a)
        for j, w in enumerate((16, 32, 64))
        for s in (0, 1)
    ]
    rows += [_row("m1", "p3", 0, "width", w, 64, spearman_eu=9.0) for w in (16, 64)]
    return pd.DataFrame(rows), b, V


def test_level_shift_is_the_level_effect_without_interaction():
    table, b, _ = _known_table(interaction=False)
    got = ablation.level_means(table, "width", [16, 32, 64], "spearman_eu", default_level=64)
    np.testing.assert_allclose(got["shift"], b - b.mean(), atol=1e-12)  # +0.01, -0.06, +0.05
    np.testing.assert_allclose(got["shift_sd"], 0, atol=1e-12)
    assert (got["cells"] == 4).all()  # m1/p3 lacks width 32 and is left out


def test_level_means_and_shifts_against_numpy():
    table, _, V = _known_table(interaction=True)
    got = ablation.level_means(table, "width", [16, 32, 64], "spearman_eu", default_level=64)
    shift = V - V.mean(axis=1, keepdims=True)
    np.testing.assert_allclose(got["mean"], V.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(got["shift"], shift.mean(axis=0), atol=1e-12)
    np.testing.assert_allclose(got["shift_sd"], shift.std(axis=0, ddof=1), rtol=1e-12)
    assert got.index.tolist() == [16, 32, 64] and (got["cells"] == 4).all()
    per_method = ablation.method_shifts(table, "width", [16, 32, 64], "spearman_eu", 64)
    np.testing.assert_allclose(per_method.loc["m1"], shift[:2].mean(axis=0), atol=1e-12)
    np.testing.assert_allclose(per_method.loc["m2"], shift[2:].mean(axis=0), atol=1e-12)


def _w_by_spearman(rows):
    """W from the mean pairwise Spearman rho of the m rows: ((m - 1) rho + 1) / m."""
    rho = np.mean([stats.spearmanr(x, y).statistic for x, y in itertools.combinations(rows, 2)])
    return ((len(rows) - 1) * rho + 1) / len(rows)


def test_rank_agreement_against_mean_pairwise_spearman():
    table = _width_table()
    ok = table[table["status"] == "ok"].assign(level=lambda t: t["width"].fillna(64))
    for metric, methods in (("spearman_eu", list(METHODS)), ("spearman_au", ["m1", "m2", "m3"])):
        means = ok.groupby(["preset", "level", "method"])[metric].mean()
        cube = np.array([[[means[(p, w, m)] for m in methods] for w in WIDTHS] for p in PRESETS])
        got = ablation.rank_agreement(table, "width", WIDTHS, metric, default_level=64)
        want_levels = np.mean([_w_by_spearman(cube[i]) for i in range(len(PRESETS))])
        want_presets = np.mean([_w_by_spearman(cube[:, j]) for j in range(len(WIDTHS))])
        assert got["w_levels"] == pytest.approx(want_levels, abs=1e-12)
        assert got["w_presets"] == pytest.approx(want_presets, abs=1e-12)
        assert got["one_minus_w_presets"] == pytest.approx(1 - want_presets, abs=1e-12)
        assert (got["presets"], got["levels"]) == (3, 4)
        assert got["methods_levels"] == got["methods_presets"] == len(methods)  # m4 dropped


def _activation_table():
    """Two levels; tanh the default (empty cells). m2/p2 is identical at both: a tie."""
    rng = np.random.default_rng(3)
    rows, values = [], {}
    for m, p in itertools.product(("m1", "m2", "m3"), PRESETS):
        relu = rng.uniform(-0.2, 0.6, size=2)
        tanh = relu.copy() if (m, p) == ("m2", "p2") else relu + rng.normal(0.05, 0.1, size=2)
        values[(m, p)] = (relu.mean(), tanh.mean())
        rows += [
            _row(m, p, s, "activation", lv, "tanh", spearman_eu=v[s])
            for lv, v in (("relu", relu), ("tanh", tanh))
            for s in (0, 1)
        ]
    return pd.DataFrame(rows), values


def test_paired_differences_and_sign_test():
    table, values = _activation_table()
    got = ablation.paired(table, "activation", ["relu", "tanh"], "spearman_eu", "tanh")
    diff = np.array([t - r for r, t in values.values()])
    pos, neg = int(np.sum(diff > 0)), int(np.sum(diff < 0))
    assert pos + neg == 8  # the tie counts as neither
    assert (got["n"], got["positive"], got["negative"]) == (9, pos, neg)
    assert got["mean"] == pytest.approx(diff.mean(), abs=1e-12)
    assert got["sd"] == pytest.approx(diff.std(ddof=1), rel=1e-10)
    assert got["p_value"] == pytest.approx(stats.binomtest(pos, pos + neg, 0.5).pvalue)
    assert got["cells"].loc[("m1", "p3"), "diff"] == pytest.approx(diff[2], abs=1e-12)
    with pytest.raises(ValueError, match="two levels"):
        ablation.paired(table, "activation", ["relu", "tanh", "gelu"], "spearman_eu", "tanh")


def test_factor_values_default_and_unknown_level():
    table = _width_table()
    got = ablation.factor_values(table.iloc[:8], "width", WIDTHS, default_level=64)
    assert got.tolist() == [16, 16, 32, 32, 64, 64, 128, 128]
    with pytest.raises(ValueError, match=r"width = 999.0 is not one of the levels \[16, 32"):
        ablation.factor_values(table, "width", WIDTHS, default_level=64)
    with pytest.raises(ValueError, match="no default_level"):
        ablation.factor_values(table.iloc[:8], "width", WIDTHS)
    with pytest.raises(ValueError, match=r"100.*default_level"):
        ablation.factor_values(table.iloc[:8], "width", WIDTHS, default_level=100)
    clash = table.copy()
    clash.loc[1, "config_hash"] = "other"
    with pytest.raises(ValueError, match="config hashes"):
        ablation.slopes(clash, "width", WIDTHS, "log2", "spearman_eu", 64)


def test_positions():
    assert ablation.positions(WIDTHS, "log2") == {16: 4.0, 32: 5.0, 64: 6.0, 128: 7.0}
    assert ablation.positions([0.5, 2], "linear") == {0.5: 0.5, 2: 2.0}
    assert ablation.positions(["sgd", "adam"], "ordinal") == {"sgd": 0.0, "adam": 1.0}
    with pytest.raises(ValueError, match="numeric levels"):
        ablation.positions(["relu", "tanh"], "log2")
    with pytest.raises(ValueError, match=r"'cubic' is not one of \['log2'"):
        ablation.positions(WIDTHS, "cubic")


def test_figures_draw_the_numbers():
    table = _width_table()
    s = ablation.slopes(table, "width", WIDTHS, "log2", "spearman_eu", 64)
    fig = figs.slope_heatmap(s, "spearman_eu", "log2(width)")
    ax = fig.axes[0]
    assert ax.get_title() and ax.get_xlabel() == "preset" and len(fig.axes) == 2  # colourbar
    want = {f"{f.slope:.2f}" for f in _linregress_by_cell(table, "spearman_eu").values()}
    assert {t.get_text() for t in ax.texts} == want
    plt.close(fig)
    per_run = ablation.runs(table, "width", WIDTHS, "spearman_eu", 64)
    fig = figs.level_curves(per_run, WIDTHS, ablation.positions(WIDTHS, "log2"), "rho", "w")
    line = next(ln for ln in fig.axes[0].lines if ln.get_label() == "m1")
    ok = table[(table["status"] == "ok") & (table["method"] == "m1")]
    median = ok.groupby(ok["width"].fillna(64))["spearman_eu"].median()
    np.testing.assert_allclose(line.get_ydata(), median.to_numpy(), rtol=1e-12)
    np.testing.assert_allclose(line.get_xdata(), [4, 5, 6, 7])
    plt.close(fig)


def test_ablation_lines_write_figures_and_numbers(tmp_path):
    table = _width_table()
    study = {
        "name": "Width",
        "factor": "width",
        "levels": WIDTHS,
        "scale": "log2",
        "default_level": 64,
        "metrics": ["spearman_eu"],
    }
    lines = study_report.ablation_lines(table, study, tmp_path, _md)
    text = "\n".join(lines)
    assert lines[0] == "## Ablation: Width"
    fits = _linregress_by_cell(table, "spearman_eu").values()
    negative = np.mean([f.slope < 0 for f in fits])
    assert f"{100 * negative:.1f}% of 12 (method, preset) pairs" in text
    w = ablation.rank_agreement(table, "width", WIDTHS, "spearman_eu", 64)["w_levels"]
    assert f"Kendall's W across levels {w:.3f}" in text
    for kind in ("slopes", "by_level", "shifts"):
        for ext in ("png", "pdf"):
            assert (tmp_path / f"ablation_width_{kind}_spearman_eu.{ext}").stat().st_size > 0
        assert f"(ablation_width_{kind}_spearman_eu.png)" in text

    table, values = _activation_table()
    study = {
        "name": "activation",
        "factor": "activation",
        "levels": ["relu", "tanh"],
        "scale": "ordinal",
        "default_level": "tanh",
        "metrics": ["spearman_eu"],
    }
    text = "\n".join(study_report.ablation_lines(table, study, tmp_path, _md))
    diff = np.array([t - r for r, t in values.values()])
    p = stats.binomtest(int(np.sum(diff > 0)), int(np.sum(diff != 0)), 0.5).pvalue
    assert f"sign test p = {p:.3g}" in text and f"mean {diff.mean():+.4f}" in text
    assert (tmp_path / "ablation_activation_paired_spearman_eu.pdf").is_file()
