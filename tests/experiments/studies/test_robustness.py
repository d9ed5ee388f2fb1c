"""The ground-truth robustness study (experiments.studies.robustness): rankings, Kendall's
tau against scipy on hand-built rank vectors, the bootstrap interval, the rank shifts, and
the page end to end on a small real study."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from typer.testing import CliRunner

from udora.experiments.cli.main import app
from udora.experiments.studies.robustness import compare, family_of, rank_matrix, robustness

METHODS = ["blr", "catboost_ps", "dkl", "edl", "nn_ensemble"]


def _table(order_by_family, presets=("a", "b", "c", "d"), seeds_by_family=None):
    """One ok run per (family, preset, method, seed); spearman_eu makes ``order`` (best
    first) the ranking on every preset, plus a preset-specific swap on preset 'b'."""
    seeds_by_family = seeds_by_family or {}
    rows = []
    for family, order in order_by_family.items():
        for preset in presets:
            ranking = list(order)
            if preset == "b":
                ranking[0], ranking[1] = ranking[1], ranking[0]
            for seed in seeds_by_family.get(family, (0, 1)):
                for r, method in enumerate(ranking):
                    rows.append(
                        {
                            "preset": preset,
                            "method": method,
                            "config": method,
                            "config_hash": f"{method}-{preset}-{family}",
                            "seed": seed,
                            "status": "ok",
                            "error": None,
                            "preset.truth": None if family == "gp" else family,
                            "spearman_eu": 1.0 - 0.1 * r + 0.001 * seed,
                            "nll": 1.0 + 0.1 * r,
                        }
                    )
    return pd.DataFrame(rows)


def test_rank_matrix_and_the_tau_against_scipy():
    table = _table({"gp": METHODS, "warped": METHODS[::-1]}, seeds_by_family={"gp": (0, 1, 2, 3)})
    assert set(family_of(table)) == {"gp", "warped"}
    gp = rank_matrix(table, "gp", (2, 3), "spearman_eu", "higher")
    assert gp.loc["a"].to_dict() == {m: i + 1.0 for i, m in enumerate(METHODS)}
    assert gp.loc["b", "blr"] == 2.0 and gp.loc["b", "catboost_ps"] == 1.0
    warped = rank_matrix(table, "warped", (0, 1), "spearman_eu", "higher")
    found = compare(gp, warped, n_boot=500)
    by_hand = stats.kendalltau(gp.mean(axis=0)[METHODS], warped.mean(axis=0)[METHODS])
    assert found.tau == pytest.approx(by_hand.statistic)
    assert found.tau == pytest.approx(-1.0)
    assert found.low <= found.tau <= found.high and found.presets == 4 and found.methods == 5
    taus, _ = robustness(table, n_boot=300)
    warped_eu = taus[(taus["metric"] == "EU Spearman") & (taus["comparison"] == "warped")]
    # the ceiling (1) minus the reversed ranking's tau (near -1), paired over the same draws
    assert 1.0 < warped_eu["gap_low"].iloc[0] <= warped_eu["gap_high"].iloc[0] <= 2.0


def test_the_ceiling_and_the_shifts():
    shuffled = ["dkl", "blr", "nn_ensemble", "catboost_ps", "edl"]
    table = _table({"gp": METHODS, "features": shuffled}, seeds_by_family={"gp": (0, 1, 2, 3)})
    taus, shifts = robustness(table, n_boot=300)
    eu = taus[taus["metric"] == "EU Spearman"].set_index("comparison")
    assert eu.loc["gp (ceiling)", "tau"] == pytest.approx(1.0)
    expected = stats.kendalltau(range(5), [shuffled.index(m) for m in METHODS]).statistic
    assert eu.loc["features", "tau"] == pytest.approx(expected)
    row = shifts[(shifts["metric"] == "EU Spearman")].set_index("method")
    # dkl is third under the GP on every preset (preset b swaps the first two only)
    assert row.loc["dkl", "rank_gp"] == pytest.approx(3.0)
    assert row.loc["dkl", "rank_features"] == pytest.approx((1 + 2 + 1 + 1) / 4)
    assert row.loc["dkl", "shift_features"] == pytest.approx(1.25 - 3.0)
    assert np.allclose(row["shift_gp_seeds"], 0.0)
    nll = taus[taus["metric"] == "NLL"].set_index("comparison")
    assert nll.loc["gp (ceiling)", "tau"] == pytest.approx(1.0)  # lower is better there


@pytest.mark.slow  # 48 small runs
def test_the_page_end_to_end_from_a_small_study(tmp_path):
    from tiny_presets import two_tiny_presets

    (a, b), data = two_tiny_presets(tmp_path)
    runner = CliRunner()
    out = tmp_path / "study"
    common = [
        "--presets",
        f"{a},{b}",
        "--methods",
        "blr,catboost_ps,ngboost_nig",
        "--set",
        "catboost_ps.n_members=2",
        "--set",
        "catboost_ps.n_estimators=20",
        "--set",
        "ngboost_nig.n_estimators=30",
        "--data-dir",
        str(data),
    ]
    study = runner.invoke(
        app,
        [
            "ablate",
            "--factor",
            "preset.truth=gp,warped,features",
            "--seeds",
            "0,1",
            "--out",
            str(out),
            *common,
        ],
    )
    assert study.exit_code == 0, study.output
    more = runner.invoke(
        app, ["bench", "--seeds", "2,3", "--set", "preset.truth=gp", "--out", str(out), *common]
    )
    assert more.exit_code == 0, more.output
    page = runner.invoke(
        app, ["robustness", str(out), "--docs", str(tmp_path / "docs"), "--boot", "200"]
    )
    assert page.exit_code == 0, page.output
    text = (tmp_path / "docs" / "robustness.md").read_text()
    assert "| metric | GP vs features | GP vs warped | GP vs GP (ceiling) |" in text
    assert "48 runs (48 ok, 0 failed)" in text and "## Failed runs\n\nNone." in text
    table = pd.read_parquet(tmp_path / "docs" / "data" / "robustness_runs.parquet")
    assert len(table) == 48 and "run_dir" not in table.columns  # no machine path ships
    again = runner.invoke(
        app,
        [
            "robustness",
            str(tmp_path / "docs" / "data" / "robustness_runs.parquet"),
            "--docs",
            str(tmp_path / "docs"),
            "--boot",
            "200",
        ],
    )
    assert again.exit_code == 0, again.output
    regenerated = (tmp_path / "docs" / "robustness.md").read_text()
    assert "udora robustness docs/data/robustness_runs.parquet --docs docs" in regenerated
    drop_source = lambda t: [line for line in t.splitlines() if "Generated by" not in line]  # noqa: E731
    assert drop_source(regenerated) == drop_source(text)  # same numbers from the table
    bad = runner.invoke(app, ["robustness", str(out), "--reference-seeds", "0,1"])
    assert bad.exit_code == 2 and "share seeds [0, 1]" in bad.output


def test_the_page_reads_a_folder_or_its_parquet_table_and_nothing_else(tmp_path):
    from udora.experiments.studies.robustness_files import load_study_runs as load_study

    (csv := tmp_path / "runs.csv").write_text("preset,method\n")
    with pytest.raises(ValueError, match=r"runs\.csv: expected the study's results folder"):
        load_study(csv)
    _table({"gp": METHODS}).to_parquet(tmp_path / "t.parquet")
    assert len(load_study(tmp_path / "t.parquet")) == 4 * 2 * len(METHODS)


def test_the_shipped_table_holds_no_machine_path(tmp_path):
    from udora.experiments.studies.robustness_files import write_table

    table = _table({"gp": METHODS}).assign(
        run_dir="/home/me/study/a/blr/h/seed-0", tuned_file="/home/me/tuned-warped/a/blr.yaml"
    )
    table.loc[0, "tuned_file"] = None
    write_table(table, tmp_path / "t.parquet")
    back = pd.read_parquet(tmp_path / "t.parquet")
    assert "run_dir" not in back and back["tuned_file"].iloc[0] is None
    assert set(back["tuned_file"].iloc[1:]) == {"tuned-warped/a/blr.yaml"}


def test_a_tuned_study_says_so_and_lists_the_tuning_commands():
    from udora.experiments.studies.robustness_files import how_lines, is_tuned

    plain = _table({"gp": METHODS, "warped": METHODS})
    tuned = plain.assign(config=plain["method"] + "@tuned")
    assert not is_tuned(plain) and is_tuned(tuned)
    text = "\n".join(how_lines(tuned, (2, 3), (0, 1), ["warped"], True, "robustness_tuned"))
    assert "--set preset.truth=warped --out tuned-warped" in text
    assert "--tuned tuned-warped --set preset.truth=warped --out truth-tuned" in text
    assert "--seeds 0,1,2,3 --jobs 2 --tuned release/tuned" in text
    assert "udora robustness docs/data/robustness_tuned_runs.parquet --docs docs --page " in text
    assert "ablate" not in text


def test_family_variants_never_pool():
    # the typed columns of the results table: a mapping override (preset.truth={family:
    # features, features: 256}) fills preset.truth.family and preset.truth.features
    table = pd.DataFrame(
        {
            "preset.truth": pd.array(
                [None, "gp", "warped", "features", "features", None, "warped"], dtype="string"
            ),
            "preset.truth.family": pd.array(
                [None, None, None, None, None, "features", None], dtype="string"
            ),
            "preset.truth.features": pd.array(
                [None, None, None, 64, 128, 256, None], dtype="Int64"
            ),
            "preset.truth.warp": [None, None, None, None, None, None, 2.5],
        }
    )
    assert family_of(table).tolist() == [
        "gp",
        "gp",
        "warped",
        "features",  # 64 is the family's default
        "features[features=128]",
        "features[features=256]",
        "warped[warp=2.5]",
    ]
