"""Meta-evaluation: Kendall's tau between observable and oracle rankings, against a
brute-force pair count, and its pooling over seeds and presets."""

import shutil

import numpy as np
import pandas as pd
import pytest

from udora.experiments.meta.taus import OBSERVABLE, ORACLE, cell_taus, goodness, pooled_taus


def _table(seed=0, presets=("a", "b", "c"), seeds=(0, 1), configs=5):
    rng = np.random.default_rng(seed)
    rows = []
    for preset in presets:
        for s in seeds:
            for k in range(configs):
                row = {"preset": preset, "seed": s, "config": f"m{k}", "status": "ok"}
                row |= {
                    name: rng.normal()
                    for name in (
                        "nll",
                        "crps",
                        "miscal_area",
                        "interval_score_50",
                        "interval_score_90",
                        "interval_score_95",
                        "nAURC_eu_realised",
                        "nAURC_total_realised",
                        "util_selective",
                        "util_topk",
                        "crps_fair",
                        "err_spread_spearman",
                        "energy_score_block",
                        "variogram_score_block",
                        "spearman_eu",
                        "spearman_au",
                        "spearman_total",
                        "nAURC_eu",
                        "nAURC_total",
                        "util_selective_oracle",
                        "util_topk_oracle",
                    )
                }
                row |= {f"coverage_{c}": rng.uniform() for c in (50, 90, 95)}
                row["spread_skill"] = rng.uniform(0.3, 3.0)
                rows.append(row)
    return pd.DataFrame(rows)


def _tau_b(x, y):
    # (C - D) / sqrt((P - X0)(P - Y0)) by counting every pair
    c = d = tx = ty = p = 0
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            p += 1
            dx, dy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
            tx += dx == 0
            ty += dy == 0
            c += dx * dy > 0
            d += dx * dy < 0
    return (c - d) / np.sqrt((p - tx) * (p - ty))


def test_cell_taus_equal_a_brute_force_count_on_goodness():
    table = _table()
    cells = cell_taus(table)
    assert len(cells) == 3 * 2 * len(OBSERVABLE) * len(ORACLE)
    cell = table[(table["preset"] == "b") & (table["seed"] == 1)]
    for obs, orc, good_obs in (
        ("nll", "spearman_eu", -cell["nll"]),
        ("coverage_error_90", "util_topk_oracle", -(cell["coverage_90"] - 0.9).abs()),
        ("spread_skill", "nAURC_eu", -np.log(cell["spread_skill"]).abs()),
        ("energy_score_block", "spearman_eu", -cell["energy_score_block"]),
    ):
        good_orc = goodness(cell, {orc: ORACLE[orc]})[orc]
        if orc == "util_topk_oracle":
            assert np.array_equal(good_orc, -cell["util_topk_oracle"])
        row = cells[
            (cells["preset"] == "b")
            & (cells["seed"] == 1)
            & (cells["observable"] == obs)
            & (cells["oracle"] == orc)
        ]
        expected = _tau_b(good_obs.to_numpy(), good_orc.to_numpy())
        assert row["tau"].item() == pytest.approx(expected, abs=1e-12)
        assert row["methods"].item() == 5


def test_ties_and_missing_values():
    table = _table(seed=1)
    table.loc[table["config"] == "m0", "nll"] = np.nan  # 4 finite left: still ranked
    table.loc[table["config"].isin(["m1", "m2"]), "crps"] = 1.0  # a tie
    table.loc[table["config"].isin(["m3", "m4"]), "miscal_area"] = np.nan  # 3: too few
    cells = cell_taus(table, min_methods=4)
    assert set(cells[cells["observable"] == "nll"]["methods"]) == {4}
    assert "miscal_area" not in set(cells["observable"])
    cell = table[(table["preset"] == "a") & (table["seed"] == 0)]
    row = cells[
        (cells["preset"] == "a")
        & (cells["seed"] == 0)
        & (cells["observable"] == "crps")
        & (cells["oracle"] == "spearman_au")
    ]
    assert row["tau"].item() == pytest.approx(
        _tau_b(-cell["crps"].to_numpy(), cell["spearman_au"].to_numpy()), abs=1e-12
    )
    with pytest.raises(ValueError, match="a config appears twice"):
        cell_taus(pd.concat([table, table.iloc[:1]]))


def test_pooling_averages_seeds_then_presets_with_a_bootstrap_over_presets():
    cells = cell_taus(_table(seed=2))
    pooled = pooled_taus(cells, n_boot=500, seed=0)
    part = cells[(cells["observable"] == "crps") & (cells["oracle"] == "spearman_eu")]
    per_preset = part.groupby("preset")["tau"].mean()
    row = pooled[(pooled["observable"] == "crps") & (pooled["oracle"] == "spearman_eu")].iloc[0]
    assert row["tau"] == pytest.approx(per_preset.mean())
    assert row["low"] <= row["tau"] <= row["high"]
    assert row["low"] >= per_preset.min() - 1e-12 and row["high"] <= per_preset.max() + 1e-12
    assert (row["presets"], row["cells"]) == (3, 6)
    again = pooled_taus(cells, n_boot=500, seed=0)
    pd.testing.assert_frame_equal(pooled, again)


def test_write_meta_tables_agree_with_the_pooled_rows(tmp_path):
    from udora.experiments.meta.outputs import tau_matrix, write_meta

    report = write_meta(_table(seed=3), tmp_path / "meta", n_boot=200, rescore=False)
    names = {p.name for p in report["written"]}
    assert names == {"meta_cells.csv", "meta_pooled.csv", "meta.md", "meta_tau.png", "meta_tau.pdf"}
    pooled = pd.read_csv(tmp_path / "meta" / "meta_pooled.csv")
    wide = tau_matrix(pooled)
    assert list(wide.index) == list(OBSERVABLE) and list(wide.columns) == list(ORACLE)
    row = pooled[(pooled["observable"] == "nll") & (pooled["oracle"] == "spearman_total")]
    assert "| nll | " in (tmp_path / "meta" / "meta.md").read_text()
    assert wide.loc["nll", "spearman_total"] == pytest.approx(row["tau"].item())
    with pytest.raises(ValueError, match="no \\(preset, seed\\) has 9 or more ok configs"):
        write_meta(_table(seed=3), tmp_path / "none", min_methods=9, rescore=False)


@pytest.mark.slow
def test_meta_command_on_a_bench_folder(tmp_path):
    from tiny_presets import two_tiny_presets
    from typer.testing import CliRunner

    from udora.experiments.cli.main import app

    (path_a, path_b), data = two_tiny_presets(tmp_path)
    runner = CliRunner()
    out = tmp_path / "results"
    methods = "blr,gp_oracle,gp_linear,nn_ensemble,nn_dropout"
    bench = runner.invoke(
        app,
        [
            "bench",
            "--presets",
            f"{path_a},{path_b}",
            "--methods",
            methods,
            "--quick",
            "--seeds",
            "0,1",
            "--out",
            str(out),
            "--data-dir",
            str(data),
        ],
    )
    assert bench.exit_code == 0, bench.output
    result = runner.invoke(
        app, ["meta", str(out), "--boot", "200", "--repeats", "3", "--data-dir", str(data)]
    )
    assert result.exit_code == 0, result.output
    cells = pd.read_csv(out / "report" / "meta" / "meta_cells.csv")
    assert set(cells["preset"]) == {"tinya", "tinyb"} and set(cells["seed"]) == {0, 1}
    assert cells["methods"].max() == 4  # gp_oracle, which reads the prior, is left out
    assert (
        "Left out of the rankings: gp_oracle: reads the task's generating prior"
        in (out / "report" / "meta" / "meta.md").read_text()
    )
    # rescoring the stored predictions on the whole pool reproduces the stored rankings
    from udora.experiments.meta.cells import load_cells, subsample_taus
    from udora.experiments.meta.iauc import IAUC_LEVELS, iauc_regions
    from udora.experiments.results.store import load_runs

    table, _ = load_runs(out)
    from udora.experiments.meta.outputs import practitioner_configs

    ranked, _ = practitioner_configs(table)  # the configs udora meta ranked
    loaded = load_cells(ranked, data_dir=str(data))
    whole = subsample_taus(loaded, sizes=(10_000,))
    # two processes share the cells and give the same rows
    one, two = (subsample_taus(loaded, sizes=(50,), repeats=3, jobs=j) for j in (1, 2))
    assert len(one) > 0
    pd.testing.assert_frame_equal(one, two)
    stored = cells[cells["oracle"] == "spearman_eu"].set_index(["preset", "seed", "observable"])
    for _, row in whole.iterrows():
        assert row["points"] == 120
        key = (row["preset"], row["seed"], row["observable"])
        assert row["tau"] == pytest.approx(stored.loc[key, "tau"], abs=1e-12)
    by_size = pd.read_csv(out / "report" / "meta" / "meta_by_size.csv")
    assert set(by_size["size"]) == {50, 200, 1000} and set(by_size["points"]) == {50, 120}
    # interval AUC: gp_oracle's intervals are the exact posterior's, so its regions are the
    # oracle reference row's; every row's three regions make one
    assert "gp_oracle" not in set(pd.read_csv(out / "report" / "meta" / "meta_iauc.csv")["config"])
    iauc = iauc_regions(load_cells(table, min_methods=1, data_dir=str(data)))
    assert np.allclose(iauc[["above", "overlap", "below"]].sum(axis=1), 1.0)
    key = ["preset", "seed", "level"]
    gp = iauc[iauc["config"] == "gp_oracle"].set_index(key).sort_index()
    ref = iauc[iauc["config"] == "oracle"].set_index(key).sort_index()
    assert len(ref) == 2 * 2 * len(IAUC_LEVELS)
    np.testing.assert_allclose(gp[["above", "below"]], ref[["above", "below"]], atol=0.01)
    chosen = runner.invoke(
        app,
        [
            "meta",
            str(out),
            "--configs",
            "nn_*,blr,gp_linear",
            "--sizes",
            "",
            "--out",
            str(tmp_path / "chosen"),
            "--data-dir",
            str(data),
        ],
    )
    assert chosen.exit_code == 0, chosen.output
    assert set(pd.read_csv(tmp_path / "chosen" / "meta_cells.csv")["methods"]) == {4}
    too_few = runner.invoke(app, ["meta", str(out), "--min-methods", "6"])
    assert too_few.exit_code == 2 and "6 or more ok configs" in too_few.output
    # block scores exist for the member methods only; two of them make a ranking of two
    from udora.experiments.meta.cells import block_metrics

    blocks = block_metrics(load_cells(table, data_dir=str(data)))
    method = blocks["run_dir"].map(lambda d: table.set_index("run_dir").loc[d, "method"])
    has_members = method.isin({"nn_ensemble", "nn_dropout"})
    assert np.isfinite(blocks.loc[has_members, "energy_score_block"]).all()
    assert blocks.loc[~has_members, "variogram_score_block"].isna().all()
    pair = runner.invoke(
        app,
        [
            "meta",
            str(out),
            "--configs",
            "nn_*",
            "--min-methods",
            "2",
            "--sizes",
            "",
            "--out",
            str(tmp_path / "pair"),
            "--data-dir",
            str(data),
        ],
    )
    assert pair.exit_code == 0, pair.output
    two = pd.read_csv(tmp_path / "pair" / "meta_cells.csv")
    assert set(two.loc[two["observable"] == "energy_score_block", "methods"]) == {2}
    # udora report ranks the same four configs and says which it left out
    report = runner.invoke(app, ["report", str(out), "--data-dir", str(data)])
    assert report.exit_code == 0, report.output
    text = (out / "report" / "report.md").read_text()
    assert "## Meta-evaluation" in text and "Left out of the rankings: gp_oracle" in text
    section = pd.read_csv(out / "report" / "meta" / "meta_cells.csv")
    assert set(section["methods"]) == set(cells["methods"])
    # other data cannot reach the runs' targets: meta reads the stored oracle arrays ...
    other = tmp_path / "other"
    other.mkdir()
    frame = pd.read_csv(data / "tiny.csv.gz")
    frame.assign(target=frame["target"] + 1.0).to_csv(other / "tiny.csv.gz", index=False)
    stored = runner.invoke(
        app,
        [
            "meta",
            str(out),
            "--sizes",
            "",
            "--out",
            str(tmp_path / "stored"),
            "--data-dir",
            str(other),
        ],
    )
    assert stored.exit_code == 0, stored.output
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "stored" / "meta_cells.csv"), cells)
    # ... and rebuilding the tasks (a folder from before they were stored) from other data
    # would score the runs against other targets
    shutil.rmtree(out / "oracle")
    wrong = runner.invoke(app, ["meta", str(out), "--data-dir", str(other)])
    assert wrong.exit_code == 2 and "the runs used" in wrong.output
    assert "give --data-dir as the runs had it" in wrong.output


@pytest.mark.parametrize(
    ("args", "target", "message"),
    [
        (["meta", "anywhere"], "udora.experiments.cli.meta._meta", "run udora meta again"),
        (
            ["report", "anywhere"],
            "udora.experiments.report.write.write_report",
            "run udora report again",
        ),
    ],
)
def test_ctrl_c_in_meta_or_report_is_one_line_and_130(args, target, message, monkeypatch):
    from typer.testing import CliRunner

    from udora.experiments.cli.main import app
    from udora.experiments.run import interrupts

    def interrupted(*_args, **_kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(target, interrupted)
    monkeypatch.setattr(interrupts, "ignore_from_now", lambda: None)  # keep pytest's Ctrl-C
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 130 and message in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("option", "value", "good"),
    [
        ("--sizes", "50,,200", False),
        ("--sizes", "50,abc", False),
        ("--sizes", "1", False),
        ("--sizes", "", True),
        ("--sizes", " 50 , 200 ", True),
        ("--repeats", "0", False),
        ("--boot", "0", False),
        ("--min-methods", "1", False),
        ("--jobs", "0", False),
    ],
)
def test_bad_meta_options_are_one_error_naming_the_option(option, value, good, monkeypatch):
    """Options are checked before any folder is read; a good value reaches the work."""
    from typer.testing import CliRunner

    from udora.experiments.cli.main import app

    seen = []
    monkeypatch.setattr(
        "udora.experiments.cli.meta._meta",
        lambda *args: seen.append(args[6]) or {"pooled": None, "written": []},
    )
    monkeypatch.setattr("udora.experiments.meta.outputs.markdown", lambda pooled: "")
    result = CliRunner().invoke(app, ["meta", "anywhere", option, value])
    if good:
        assert result.exit_code == 0, result.output
        assert seen == [tuple(int(v) for v in value.split(",") if v.strip())]
    else:
        assert result.exit_code == 2 and option in result.output and not seen, result.output
        assert "Traceback" not in result.output
