"""Your runs beside a frozen baseline (udora.experiments.rankings.baseline): matching by
task hash, refusals with their reason, Wilcoxon and Holm against scipy and the step-down
formula, the rank a config would take counted by hand; then `udora report --baseline`
end to end on real runs of a tiny preset."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from typer.testing import CliRunner

from udora.experiments.cli.main import app
from udora.experiments.publish.artefact import load_baseline
from udora.experiments.rankings.baseline import compare, match, would_rank
from udora.experiments.rankings.beside import beside_baseline, summary
from udora.experiments.results.sections import markdown_table
from udora.experiments.run.execute import run_one


def frame(methods, shift, presets=8, seeds=(0, 1), seed=0, tag=""):
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(presets):
        for s in seeds:
            for m, d in zip(methods, shift, strict=True):
                eu = d + 0.1 * p + rng.normal(0, 0.05)
                rows.append(
                    {
                        "preset": f"p{p}",
                        "method": m,
                        "config": m,
                        "seed": s,
                        "status": "ok",
                        "task_hash": f"h{p}-{s}{tag}",
                        "data_sha256": f"d{p}{tag}",
                        "spearman_eu": eu,
                        "nll": -eu,
                    }
                )
    return pd.DataFrame(rows)


BASE = frame(("nn_ensemble", "laplace", "blr", "gp_oracle"), (0.3, 0.2, 0.0, 0.6))


def test_rows_match_by_task_hash_and_others_are_refused_with_the_reason():
    mine = frame(("catboost_ps",), (0.25,), seed=1)
    other = mine["preset"] == "p2"
    mine.loc[other, "task_hash"] += "x"
    mine.loc[other, "data_sha256"] += "x"
    extra = mine[mine["preset"] == "p0"].assign(preset="p99", task_hash="new")
    m = match(pd.concat([mine, extra]), BASE)
    assert set(m.mine["preset"]) == set(m.theirs["preset"]) == {f"p{i}" for i in range(8)} - {"p2"}
    assert len(m.refused) == 2 and all("p2 seed" in r and "the data differ" in r for r in m.refused)
    assert m.unmatched == [("p99", 0), ("p99", 1)]


def test_the_paired_test_is_scipys_wilcoxon_with_holm_over_the_baselines():
    mine = frame(("catboost_ps",), (0.25,), seed=1)
    out = compare(match(mine, BASE))
    eu = out[out["metric"] == "EU Spearman"].set_index("baseline")
    ours = mine.groupby("preset")["spearman_eu"].mean()
    p = {}
    for b in BASE["config"].unique():
        theirs = BASE[BASE["config"] == b].groupby("preset")["spearman_eu"].mean()
        d = ours - theirs
        p[b] = stats.wilcoxon(d).pvalue
        assert eu.at[b, "p"] == pytest.approx(p[b], rel=1e-12)
        assert eu.at[b, "wins"] == (d > 0).sum() and eu.at[b, "presets"] == 8
        assert eu.at[b, "median_gain"] == pytest.approx(np.median(d), rel=1e-12)
    names = sorted(set(p) - {"gp_oracle"}, key=p.get)  # the reference is outside the family
    raw = np.array([p[n] for n in names])
    holm = np.maximum.accumulate(np.minimum(1, raw * (len(raw) - np.arange(len(raw)))))
    for n, h in zip(names, holm, strict=True):
        assert eu.at[n, "p_holm"] == pytest.approx(h, rel=1e-12)
    assert eu.at["blr", "verdict"] == "better" and np.isnan(eu.at["gp_oracle", "p_holm"])
    assert eu.at["gp_oracle", "verdict"] == "GP reference, not tested"
    nll = out[out["metric"] == "NLL"].set_index("baseline")  # lower is better: same gains
    np.testing.assert_allclose(nll["median_gain"], eu["median_gain"], rtol=1e-12)


def test_a_baseline_config_without_the_metric_gets_no_verdict_of_equality():
    base = BASE.copy()
    base.loc[base["config"] == "blr", "nll"] = np.nan  # e.g. the AU of a constant-AU method
    out = compare(match(frame(("catboost_ps",), (0.25,), seed=1), base))
    blr = out[(out["metric"] == "NLL") & (out["baseline"] == "blr")].iloc[0]
    assert blr["presets"] == 0 and np.isnan(blr["p"]) and np.isnan(blr["p_holm"])
    assert blr["verdict"].startswith("no paired presets")
    others = out[(out["metric"] == "NLL") & (out["baseline"] != "blr")]
    assert (others["presets"] == 8).all()
    assert not others["verdict"].str.startswith("no paired").any()


def test_the_rank_it_would_take_leaves_the_references_out():
    mine = frame(("catboost_ps",), (0.25,), seed=1)
    r = would_rank(match(mine, BASE), "spearman_eu", "higher")
    base = BASE[BASE["config"] != "gp_oracle"].groupby(["preset", "config"])["spearman_eu"]
    base = base.mean().unstack()
    ours = mine.groupby("preset")["spearman_eu"].mean()
    expected = (1 + (base.to_numpy() > ours.to_numpy()[:, None]).sum(axis=1)).mean()
    assert r.at["catboost_ps", "would_rank"] == pytest.approx(expected)
    assert r.at["catboost_ps", "of"] == 4


def test_the_baselines_method_seed_variants_are_left_out():
    """A release's noise floor (a config refitted at other fit seeds on two presets) is no
    config of its own: with it, a run on those presets was compared with 3 more copies of
    each method (the shipped classification release: "33.0 of 49" on pima)."""
    base = BASE.assign(config_base=BASE["config"])
    floor = base[base["preset"].isin(["p0", "p1"]) & (base["config"] != "gp_oracle")]
    variants = [
        floor.assign(config=floor["config"] + f"[method_seed={k}]", spearman_eu=9.0, nll=-9.0)
        for k in (1, 2, 3)
    ]
    with_floor = pd.concat([base, *variants], ignore_index=True)
    mine = frame(("catboost_ps",), (0.25,), seed=1)
    m = match(mine, with_floor)
    assert len(m.variants) == 9 and not m.theirs["config"].str.contains("method_seed").any()
    out, plain = compare(m), compare(match(mine, base))
    pd.testing.assert_frame_equal(out, plain)  # the comparison without the floor, exactly
    r = would_rank(m, "spearman_eu", "higher")
    assert r.at["catboost_ps", "of"] == 4
    assert (
        r.at["catboost_ps", "would_rank"]
        == would_rank(match(mine, base), "spearman_eu", "higher").at["catboost_ps", "would_rank"]
    )
    lines, _ = beside_baseline(mine, with_floor, markdown_table)
    assert "The baseline's 9 `method_seed` variants (its noise floor: " in lines[2]
    # a table written by hand, without config_base, marks them by its method_seed column
    by_hand = with_floor.drop(columns="config_base").assign(
        method_seed=with_floor["config"].str.extract(r"method_seed=(\d)")[0].astype(float)
    )
    assert match(mine, by_hand).variants == m.variants
    pd.testing.assert_frame_equal(compare(match(mine, by_hand)), plain)


def test_a_bad_baseline_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="expected 'release', a results folder"):
        load_baseline(tmp_path / "table.txt")
    (p := tmp_path / "t.csv").write_text("preset,method\nx,y\n")
    with pytest.raises(ValueError, match=r"t\.csv: the baseline table has no column config"):
        load_baseline(p)


@pytest.mark.slow
def test_report_beside_a_baseline_folder_end_to_end(tiny_preset, tmp_path):
    path, data = tiny_preset
    for method in ("blr", "gp_linear"):
        for seed in (0, 1):
            assert run_one(path, method, seed, {}, tmp_path / "base", data_dir=data).status == "ok"
    base = load_baseline(tmp_path / "base")
    base.to_parquet(tmp_path / "base.parquet")
    for seed in (0, 1, 2):
        assert (
            run_one(
                path,
                "catboost_ps",
                seed,
                {"n_members": 2, "n_estimators": 20},
                tmp_path / "mine",
                data_dir=data,
            ).status
            == "ok"
        )
    result = CliRunner().invoke(
        app, ["report", str(tmp_path / "mine"), "--baseline", str(tmp_path / "base.parquet")]
    )
    assert result.exit_code == 0, result.output
    text = (tmp_path / "mine" / "report" / "report.md").read_text()
    page = (tmp_path / "mine" / "report" / "baseline.md").read_text()
    assert "## Beside the baseline\n\n2 of your tasks" in text and "0 refused, 1 not in it" in text
    assert "Not in the baseline: tiny seed 2." in page
    assert "| catboost_ps[n_estimators=20,n_members=2] | EU Spearman | blr | False |" not in page
    assert "| catboost_ps[n_estimators=20,n_members=2] | EU Spearman | blr | 1 |" in page
    assert "| EU Spearman | catboost_ps[n_estimators=20,n_members=2] | 1 |" in text
    assert "warning:" not in result.output
    other = base.assign(task_hash=np.where(base["seed"] == 0, "edited", base["task_hash"]))
    other.to_parquet(tmp_path / "other.parquet")
    result = CliRunner().invoke(
        app, ["report", str(tmp_path / "mine"), "--baseline", str(tmp_path / "other.parquet")]
    )
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "warning: 1 of your tasks are not the baseline's" in said
    assert "tiny seed 0" in said and "(baseline.md in the report folder lists them)" in said
    missing = CliRunner().invoke(
        app, ["report", str(tmp_path / "mine"), "--baseline", str(tmp_path / "nowhere.parquet")]
    )
    assert missing.exit_code != 0 and "nowhere.parquet" in missing.output


def test_a_preset_with_a_package_copy_matches_either_task():
    from udora.experiments.publish.artefact import primary_rows

    copy = frame(("nn_ensemble", "blr"), (0.3, 0.0), tag="pkg").assign(data_kind="package")
    both = pd.concat([BASE.assign(data_kind="file"), copy], ignore_index=True)
    mine = frame(("catboost_ps",), (0.25,), seed=1, tag="pkg").assign(data_kind="package")
    m = match(mine, both)
    assert not m.refused and set(m.theirs["task_hash"]) == set(mine["task_hash"])
    assert set(m.theirs["config"]) == {"nn_ensemble", "blr"}  # the copy's rows only
    assert len(primary_rows(both)) == len(BASE)
    odd = mine.assign(task_hash=mine["task_hash"] + "?", data_sha256="zz")
    refused = match(odd, both).refused
    assert len(refused) == 16 and "d0pkg in the baseline" in refused[0]  # same kind first


def test_runs_without_a_task_hash_are_refused_not_skipped():
    mine = frame(("catboost_ps",), (0.25,), seed=1)
    mine.loc[0, "task_hash"] = None
    with pytest.raises(ValueError, match="your runs: some ok runs have no task hash"):
        match(mine, BASE)
    with pytest.raises(ValueError, match="the baseline: some ok runs have no task hash"):
        match(frame(("blr",), (0.0,)), BASE.assign(task_hash=None))


def test_pairs_use_the_seeds_both_sides_ran():
    mine = frame(("catboost_ps",), (0.25,), seed=1)
    mine = mine[~((mine["preset"] == "p0") & (mine["seed"] == 1))]  # one seed missing
    out = compare(match(mine, BASE)).set_index(["metric", "baseline"])
    theirs = BASE[(BASE["config"] == "blr") & ~((BASE["preset"] == "p0") & (BASE["seed"] == 1))]
    d = (
        mine.groupby("preset")["spearman_eu"].mean()
        - theirs.groupby("preset")["spearman_eu"].mean()
    )
    assert out.at[("EU Spearman", "blr"), "median_gain"] == pytest.approx(np.median(d), rel=1e-12)


def test_the_summary_sums_the_tested_comparisons():
    """Per metric and config: wins/ties/losses summed over the baseline configs that are
    tested (the GP reference aside), the median of their median gains, the verdicts
    counted, the rank it would take; counted from compare's rows by hand."""
    mine = pd.concat([frame(("catboost_ps",), (0.25,), seed=1), frame(("edl",), (0.05,), seed=2)])
    m = match(mine, BASE)
    result = compare(m)
    table = summary(m, result).set_index(["metric", "config"])
    assert list(table.index.get_level_values("metric").unique()) == ["EU Spearman", "NLL"]
    for (label, config), row in table.iterrows():
        own = result[(result["metric"] == label) & (result["config"] == config)]
        own = own[own["baseline"] != "gp_oracle"]
        assert row["baseline configs"] == 3
        w, t, lo = own["wins"].sum(), own["ties"].sum(), own["losses"].sum()
        assert row["wins/ties/losses"] == f"{w}/{t}/{lo}" and w + t + lo == 3 * 8
        assert row["median gain"] == pytest.approx(np.median(own["median_gain"]), rel=1e-12)
        assert row["better than"] == (own["verdict"] == "better").sum()
        assert row["worse than"] == (own["verdict"] == "worse").sum()
    # catboost_ps (0.25) beats blr (0.0) and loses to nn_ensemble (0.3) on every preset
    cat = table.loc[("EU Spearman", "catboost_ps")]
    assert (cat["better than"], cat["worse than"]) == (2, 1)
    rank = would_rank(m, "spearman_eu", "higher").at["catboost_ps", "would_rank"]
    assert cat["would rank"] == f"{rank:.1f} of 4"


def test_report_md_gets_the_summary_and_the_page_gets_every_comparison():
    mine = frame(("catboost_ps",), (0.25,), seed=1)
    lines, page = beside_baseline(mine, BASE, markdown_table)
    text, full = "\n".join(lines), "\n".join(page)
    assert "[baseline.md](baseline.md) ([HTML](baseline.html))" in text
    assert "signed so that > 0 favours yours" in text
    assert "| metric | config | baseline configs | wins/ties/losses | median gain |" in text
    assert "| EU Spearman | catboost_ps | 3 | 17/0/7 | 0.057 | 2 | 1 | 1.9 of 4 |" in text
    assert "gp_oracle" not in text and "| config | metric | baseline |" not in text
    rows = [
        ln
        for ln in full.splitlines()
        if ln.startswith(("| catboost_ps | EU", "| catboost_ps | NLL"))
    ]
    assert len(rows) == len(compare(match(mine, BASE)))  # every comparison, on the page
    assert "| catboost_ps | EU Spearman | gp_oracle |" in full
    assert full.startswith("# Beside the baseline: every paired comparison")


@pytest.mark.slow  # 3-14 s: the default set's budget
def test_report_writes_the_baseline_page_and_links_it(tmp_path):
    """A real report: report.md and rankings.html carry the summary and the link, the page
    is written as Markdown and HTML under the Rankings tab, and a later report without a
    baseline removes it."""
    from tiny_presets import two_tiny_presets

    from udora.experiments.report.write import write_report

    paths, data = two_tiny_presets(tmp_path)
    for path in paths:
        for seed in (0, 1):
            for folder, overrides in (("base", {}), ("mine", {"sigma": 0.2})):
                run = run_one(path, "blr", seed, overrides, tmp_path / folder, data_dir=data)
                assert run.status == "ok"
    report = write_report(tmp_path / "mine", baseline=tmp_path / "base")
    out = report.parent
    text = report.read_text()
    assert "| EU Spearman | blr[sigma=0.2] | 1 | " in text
    assert "| blr[sigma=0.2] | EU Spearman | blr |" not in text  # the full table moved
    page = (out / "baseline.md").read_text()
    assert "| blr[sigma=0.2] | EU Spearman | blr | 2 |" in page
    html = (out / "baseline.html").read_text()
    assert '<a href="rankings.html" aria-current=page>Rankings</a>' in html
    assert "<td>blr[sigma=0.2]</td>" in html and "<title>Beside the baseline" in html
    assert '<a href="baseline.html">HTML</a>' in (out / "rankings.html").read_text()
    write_report(tmp_path / "mine")
    assert not (out / "baseline.md").exists() and not (out / "baseline.html").exists()


def test_the_baseline_page_shows_a_hostile_label_as_text():
    from udora.experiments.rankings.beside import PAGE, TITLE
    from udora.experiments.report.pages import own_page_html
    from udora.experiments.results.sections import Page

    evil = "<img src=x onerror=alert(1)>"
    base = BASE.assign(config=BASE["config"].where(BASE["config"] != "blr", evil))
    _, page = beside_baseline(frame(("catboost_ps",), (0.25,), seed=1), base, markdown_table)
    html = own_page_html(Page(PAGE, TITLE, tuple(page)), "rankings", [])
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html


def test_a_sampled_oracle_of_other_arrays_is_refused_and_an_exact_one_is_not():
    """A classification task (Monte Carlo targets) scored on other oracle arrays than the
    baseline's is refused, naming both checksums; a regression task's arrays are exact,
    so its checksum is not compared."""
    for kind, refused in (("classification", 1), ("regression", 0)):
        base = BASE.assign(kind=kind, oracle_sha256="a" * 64)
        mine = frame(("catboost_ps",), (0.25,), seed=1).assign(kind=kind, oracle_sha256="a" * 64)
        mine.loc[(mine["preset"] == "p3") & (mine["seed"] == 1), "oracle_sha256"] = "b" * 64
        m = match(mine, base)
        assert len(m.refused) == refused, kind
        if refused:
            assert "p3 seed 1" in m.refused[0] and "bbbbbbbbbbbb here, aaaaaaaaaaaa" in m.refused[0]
            assert "h3-1" not in set(m.mine["task_hash"]) | set(m.theirs["task_hash"])
        assert len(m.mine) == 16 - refused


def test_a_classification_comparison_uses_its_kinds_metrics_and_rows():
    """Beside a baseline of both kinds, classification runs meet only its classification
    rows and are compared on the kind's ranked metrics (the mean KL among them)."""
    from udora.scoring.registry import metric

    base = pd.concat(
        [
            BASE.assign(kind="classification", kl_mean=lambda t: 1 - t["spearman_eu"]),
            BASE.assign(kind="regression", task_hash=lambda t: "r" + t["task_hash"]),
        ]
    )
    mine = frame(("catboost_ve",), (0.45,), seed=1).assign(
        kind="classification", kl_mean=lambda t: 1 - t["spearman_eu"]
    )
    lines, page = beside_baseline(mine, base, markdown_table, "classification", "b_cls")
    assert page[0].startswith("# ")
    assert lines[0] == "## Beside the baseline (classification)"
    assert "16 of your tasks" in lines[2] and "[b_cls.md](b_cls.md)" in "\n".join(lines)
    text = "\n".join(lines)
    assert metric("kl_mean").label.split("(")[0].strip() in text


def test_a_baseline_without_the_kind_says_so_and_compares_nothing():
    """Classification runs beside a baseline of regression rows only (the shipped release
    before its classification part): one warning and one line naming the kind, no test
    described; with rows of the kind but none of the user's tasks: no test described."""
    from udora.experiments.rankings.baseline import BaselineMismatchWarning

    mine = frame(("catboost_ve",), (0.45,), seed=1).assign(kind="classification")
    regression = BASE.assign(kind="regression")
    with pytest.warns(BaselineMismatchWarning, match="^the baseline holds no classification"):
        lines, page = beside_baseline(mine, regression, markdown_table, "classification")
    assert lines == [
        "## Beside the baseline (classification)",
        "",
        "Nothing to compare: the baseline holds no classification runs.",
        "",
    ]
    assert page[-2] == lines[-2]
    assert "kind" not in BASE  # a table written before kinds (release@v1): regression
    with pytest.warns(BaselineMismatchWarning, match="^the baseline holds no classification"):
        old, _ = beside_baseline(mine, BASE, markdown_table, "classification")
    assert old == lines
    other = BASE.assign(kind="classification", preset=lambda t: "q" + t["preset"])
    with pytest.warns(BaselineMismatchWarning, match="none of your tasks is in the baseline"):
        lines, _ = beside_baseline(mine, other, markdown_table, "classification")
    assert "Wilcoxon" not in "\n".join(lines) and lines[-2].startswith("Nothing to compare")
