"""The active-learning study (experiments.acquisition.study): a round's task is the base
task conditioned on the acquired points with their realised outcomes (checked against a
dense numpy posterior), its hash covers them, each strategy picks what it says from the
previous round's prediction, and a second call resumes without fitting again."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from tiny_presets import dense_posterior_covariance, matern32_preset

from udora.experiments.acquisition.study import make_chains, run_acquisition
from udora.experiments.tasks import arrays as oracle_arrays
from udora.oracle.acquisition import split_pool
from udora.oracle.preset import load_preset
from udora.oracle.task import build_task


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    folder = tmp_path_factory.mktemp("acquire")
    path = str(matern32_preset(folder, 110, 30))
    chains = make_chains([path], ["blr", "gp_oracle"], [1], ("eu", "bald", "random", "exact"))
    out = folder / "out"
    summary, rows = run_acquisition(chains, out, rounds=2, batch=6, data_dir=folder)
    return folder, path, chains, out, summary, pd.read_parquet(rows)


@pytest.mark.slow  # seconds each: in the slow set (CI runs it)
def test_chains_rounds_and_rows(study):
    _, _, chains, _, summary, rows = study
    assert len(chains) == 7  # exact for gp_oracle only
    assert summary.ok and (rows["status"] == "ok").all()
    assert len(rows) == 7 * 3 and sorted(rows["round"].unique()) == [0, 1, 2]
    assert (rows["n_acquired"] == 6 * rows["round"]).all()
    # round 0 is one run per method, shared by its chains; later rounds differ by strategy
    first = rows[rows["round"] == 0]
    assert first.groupby("method")["task_hash"].nunique().eq(1).all()
    assert rows[rows["round"] == 2]["task_hash"].nunique() >= 5


@pytest.mark.slow  # seconds each: in the slow set (CI runs it)
def test_a_rounds_task_is_the_dense_posterior_given_the_acquired_points(study):
    folder, path, _, out, _, rows = study
    base = build_task(load_preset(path), 1, data_dir=folder)
    row = rows[(rows.method == "gp_oracle") & (rows.strategy == "eu") & (rows["round"] == 2)]
    stored = oracle_arrays.load(out, row["task_hash"].item())
    n = base.train_idx.size
    acquired = stored.train_idx[n:]
    assert acquired.size == 12 and np.array_equal(stored.train_idx[:n], base.train_idx)
    np.testing.assert_array_equal(stored.y_train[n:], base.y[acquired])  # realised outcomes
    np.testing.assert_array_equal(stored.f, base.f)
    dense = dense_posterior_covariance(base, extra=acquired)
    np.testing.assert_allclose(stored.post_var, np.diag(dense), rtol=1e-6, atol=1e-10)
    cand, evaluation = split_pool(base)
    assert set(acquired) <= set(cand) and not set(acquired) & set(evaluation)


@pytest.mark.slow  # seconds each: in the slow set (CI runs it)
def test_largest_eu_picks_the_top_eu_candidates_of_the_previous_round(study):
    folder, path, _, out, _, rows = study
    base = build_task(load_preset(path), 1, data_dir=folder)
    cand, _ = split_pool(base)
    r0 = rows[(rows.method == "blr") & (rows.strategy == "eu") & (rows["round"] == 0)]
    r1 = rows[(rows.method == "blr") & (rows.strategy == "eu") & (rows["round"] == 1)]
    with np.load(out / r0["run"].item() / "predictions.npz") as z:
        eu = z["epistemic"]
    picked = oracle_arrays.load(out, r1["task_hash"].item()).train_idx[base.train_idx.size :]
    expected = cand[np.argsort(-eu[cand], kind="stable")[:6]]
    np.testing.assert_array_equal(picked, expected)


@pytest.mark.slow  # seconds each: in the slow set (CI runs it)
def test_a_second_call_resumes_without_fitting(study):
    folder, _, chains, out, _, rows = study
    summary, path = run_acquisition(chains, out, rounds=2, batch=6, data_dir=folder)
    assert summary.done == 0 and summary.skipped > 0
    again = pd.read_parquet(path)
    pd.testing.assert_frame_equal(again, rows)


def test_a_strategy_given_twice_is_refused():
    with pytest.raises(ValueError, match="a strategy is given twice: eu, eu"):
        make_chains(["concrete"], ["blr"], [0], ("eu", "eu"))


@pytest.mark.slow  # seconds each: in the slow set (CI runs it)
@pytest.mark.parametrize("acquired", [[3, 3], [-1], [110]])
def test_bad_acquired_points_are_refused_naming_the_field(study, acquired):
    from udora.oracle.preset import PresetError

    _, path, *_ = study
    with pytest.raises((PresetError, ValueError), match="acquired: expected distinct pool"):
        load_preset(path).with_overrides({"acquired": acquired})


@pytest.mark.slow  # seconds each: in the slow set (CI runs it)
def test_the_report_leaves_the_later_rounds_to_the_study_section(study):
    from udora.experiments.report.write import write_report

    folder, _, _, out, _, rows = study
    later = rows[rows["round"] > 0].drop_duplicates(["method", "task_hash"])
    first = rows[rows["round"] == 0].drop_duplicates(["method", "task_hash"])
    report = write_report(out, out_dir=out / "report", data_dir=str(folder))
    text = report.read_text()
    assert f"{len(later)} runs of an active-learning study's later rounds" in text
    assert text.splitlines()[2].startswith(f"{len(first)} runs ({len(first)} ok")
    assert "## Active learning" in text
    assert "acquired=" not in text  # no later round's config in any table
    kept = pd.read_parquet(out / "report" / "results.parquet")  # every run, as loaded
    assert len(kept) == len(later) + len(first)
    assert sorted(kept["n_acquired"].unique()) == sorted(rows["n_acquired"].unique())
