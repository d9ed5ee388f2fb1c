"""The meta-evaluation of classification runs: its two sides are the kind's (log loss,
Brier, ECE, accuracy against the oracle's EU, AU and total), each cell's tau is scipy's on
the goodness, a folder of both kinds is refused, and on real runs the observables
rescored on the whole pool rank exactly as the stored metrics do."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau
from tiny_presets import tiny_classification_preset

from udora.errors import UserError
from udora.experiments.meta.outputs import write_meta
from udora.experiments.meta.taus import cell_taus, sides


def _table(rng, n_methods=5):
    rows = []
    for preset in ("a", "b"):
        for m in range(n_methods):
            rows.append(
                dict(
                    preset=preset,
                    seed=0,
                    config=f"m{m}",
                    method=f"m{m}",
                    status="ok",
                    kind="classification",
                    nll=rng.uniform(0.2, 1.0),
                    brier=rng.uniform(0.1, 0.6),
                    ece=rng.uniform(0, 0.2),
                    accuracy=rng.uniform(0.5, 0.9),
                    spearman_eu=rng.uniform(0, 1),
                    spearman_au=rng.uniform(0, 1),
                    spearman_total=rng.uniform(0, 1),
                    nAURC_eu=rng.uniform(0, 1),
                    nAURC_total=rng.uniform(0, 1),
                )
            )
    return pd.DataFrame(rows)


def test_the_sides_are_the_kinds_and_taus_are_scipys():
    observable, oracle = sides("classification")
    assert list(observable) == ["nll", "brier", "ece", "accuracy"]
    assert {"spearman_eu", "spearman_au", "spearman_total"} <= set(oracle)
    table = _table(np.random.default_rng(0))
    cells = cell_taus(table, min_methods=4, kind="classification")
    a = table[table["preset"] == "a"]
    row = cells[(cells["preset"] == "a") & (cells["observable"] == "nll")]
    row = row[row["oracle"] == "spearman_eu"].iloc[0]
    # a loss ranks lower-is-better: its goodness is the negated value
    assert row["tau"] == pytest.approx(kendalltau(-a["nll"], a["spearman_eu"]).statistic)
    acc = cells[(cells["preset"] == "b") & (cells["observable"] == "accuracy")]
    acc = acc[acc["oracle"] == "spearman_au"].iloc[0]
    b = table[table["preset"] == "b"]
    assert acc["tau"] == pytest.approx(kendalltau(b["accuracy"], b["spearman_au"]).statistic)


def test_noise_floor_replicates_are_not_ranked_as_configs_of_their_own(tmp_path):
    """A run with ``--set method_seed=M`` replicates its config (the noise floor): ranked
    beside it, one method would count twice in its cell. It is left out and said so, and
    the cell's taus are those of the table without it."""
    table = _table(np.random.default_rng(2)).assign(config_base=lambda t: t["config"])
    floor = table[table["preset"] == "a"].head(3).copy()
    floor["config"] = floor["config"] + "[method_seed=1]"
    floor[["nll", "spearman_eu"]] = [[5.0, 1.0]] * 3  # would move every tau it entered
    both = write_meta(pd.concat([table, floor]), tmp_path / "m", rescore=False, n_boot=20)
    alone = write_meta(table, tmp_path / "alone", rescore=False, n_boot=20)
    pd.testing.assert_frame_equal(both["cells"], alone["cells"])
    assert both["left_out"] == {
        c: "a method_seed variant (noise floor)" for c in sorted(floor["config"])
    }
    from udora.experiments.meta.outputs import left_out_line

    assert left_out_line(both["left_out"]) == (
        "Left out of the rankings: m0[method_seed=1], m1[method_seed=1], m2[method_seed=1]: "
        "a method_seed variant (noise floor)."
    )
    many = {f"c{i}": "why" for i in range(5)} | {"g": "other"}
    assert (
        left_out_line(many) == "Left out of the rankings: 5 configs (c0, c1, ...): why; g: other."
    )


def test_a_folder_of_both_kinds_is_refused(tmp_path):
    table = _table(np.random.default_rng(1))
    table.loc[table["preset"] == "b", "kind"] = "regression"
    with pytest.raises(UserError, match=r"classification and regression tasks"):
        write_meta(table, tmp_path / "meta", rescore=False)


@pytest.mark.slow  # builds the tiny task's sampled oracle (~15 s) and runs 4 methods
def test_on_real_runs_the_whole_pool_rescoring_ranks_as_the_stored_metrics(tmp_path, monkeypatch):
    from udora.experiments.grid.bench import make_grid, run_grid
    from udora.experiments.results.store import load_runs

    monkeypatch.setenv("UDORA_TASK_CACHE", str(tmp_path / "cache"))
    _, data = tiny_classification_preset(tmp_path)
    preset = str(tmp_path / "tinycls.yaml")
    methods = ["blr_logistic", "catboost_ps", "nn_ensemble", "edl", "nn_dropout"]
    runs = make_grid([preset], methods, [0], quick=True, data_dir=data)
    run_grid(runs, tmp_path / "res", data_dir=data)
    table, _ = load_runs(tmp_path / "res")
    assert (table["status"] == "ok").all()
    result = write_meta(table, tmp_path / "meta", sizes=(10, 10_000), repeats=3, n_boot=50)
    cells, by_size = result["cells"], result["by_size"]
    whole = by_size[by_size["size"] == 10_000].set_index("observable")["tau"]
    stored = cells[cells["oracle"] == "spearman_eu"].set_index("observable")["tau"]
    for obs in ("nll", "brier", "accuracy", "ece"):
        assert whole[obs] == pytest.approx(stored[obs], abs=1e-12), obs
    assert set(by_size["points"]) == {10, 90}
    # a cell's subsets do not depend on the table's other cells (a release's parts)
    from udora.experiments.meta.kind_sizes import subsample_taus

    alone = subsample_taus(table, "classification", (10,), 3)
    beside = subsample_taus(
        pd.concat([table.assign(preset="aaa"), table]), "classification", (10,), 3
    )
    pd.testing.assert_frame_equal(
        beside[beside["preset"] == "tinycls"].reset_index(drop=True), alone
    )
    assert (
        (tmp_path / "meta" / "meta.md")
        .read_text()
        .startswith("# Which observable metrics rank methods like the oracle (classification)")
    )
    # a release keeps no class probabilities: a part carries the rows udora meta wrote
    # from its runs, and `udora meta RELEASE` gives the runs' meta-evaluation back
    import shutil

    from typer.testing import CliRunner

    from udora.experiments.cli.main import app
    from udora.experiments.publish.artefact import build_release

    build_release([tmp_path / "res"], tmp_path / "part")
    shutil.copy(tmp_path / "meta" / "meta_by_size.csv", tmp_path / "part")
    build_release([tmp_path / "part"], tmp_path / "rel")
    args = ["meta", str(tmp_path / "rel"), "--out", str(tmp_path / "again"), "--boot", "50"]
    done = CliRunner().invoke(app, [*args, "--sizes", "10,10000"])
    assert done.exit_code == 0, done.output
    again = tmp_path / "again"
    pd.testing.assert_frame_equal(pd.read_csv(again / "meta_by_size.csv"), by_size)
    pd.testing.assert_frame_equal(pd.read_csv(again / "meta_cells.csv"), cells)
