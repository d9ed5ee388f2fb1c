"""The method's own seed apart from the task seed (``--set method_seed=M``): what it changes
in a run's identity, that the same fit seed gives the same run, and the noise floor
against a hand computation."""

from __future__ import annotations

import statistics

import numpy as np
import pandas as pd
import pytest

from udora.experiments.rankings.noise import noise_floor
from udora.experiments.report.write import write_report
from udora.experiments.run.checks import UsageError
from udora.experiments.run.execute import run_one
from udora.experiments.run.spec import RunSpec, resolve

SMALL = {"n_members": 2, "n_estimators": 20}


@pytest.fixture(autouse=True)
def _tiny_data_dir(tiny_preset, monkeypatch):
    monkeypatch.setenv("UDORA_DATA_DIR", str(tiny_preset[1]))


def test_the_method_seed_enters_the_method_identity_only(tiny_preset):
    path, _ = tiny_preset
    default = resolve(RunSpec(str(path), "catboost_ps", 3, dict(SMALL)))
    own = resolve(RunSpec(str(path), "catboost_ps", 3, {**SMALL, "method_seed": 7}))
    assert own.task_hash == default.task_hash  # the same data and targets
    assert own.config_hash != default.config_hash and own.identity["method"]["seed"] == 7
    assert "seed" not in default.identity["method"]
    assert (default.fit_seed, own.fit_seed) == (3, 7)
    assert own.label == "method_seed=7,n_estimators=20,n_members=2"
    assert own.config.to_dict() == default.config.to_dict()  # not a method field


@pytest.mark.parametrize("bad", ["x", -1, True, 1.5])
def test_a_bad_method_seed_is_one_error(tiny_preset, bad):
    with pytest.raises(UsageError, match=r"--set method_seed=.*expected a non-negative integer"):
        resolve(RunSpec(str(tiny_preset[0]), "blr", 0, {"method_seed": bad}))


@pytest.mark.slow  # 3-14 s: the default set's budget
def test_the_same_fit_seed_is_the_same_run_and_another_moves_it(tiny_preset, tmp_path):
    path, data = tiny_preset
    out = tmp_path / "runs"
    runs = {
        m: run_one(
            path,
            "catboost_ps",
            0,
            {**SMALL, **({} if m is None else {"method_seed": m})},
            out,
            data_dir=data,
        )
        for m in (None, 0, 1)
    }
    assert all(r.status == "ok" for r in runs.values())
    table = write_report(out).parent / "results.parquet"
    t = pd.read_parquet(table).set_index("method_seed", drop=False)
    metrics = ["spearman_eu", "spearman_au", "nll"]
    np.testing.assert_array_equal(
        t.loc[t["method_seed"].isna(), metrics].to_numpy(),
        t.loc[t["method_seed"] == 0, metrics].to_numpy(),
    )
    assert not np.allclose(
        t.loc[t["method_seed"] == 1, metrics].to_numpy(),
        t.loc[t["method_seed"] == 0, metrics].to_numpy(),
    )
    assert set(t["config_base"]) == {"catboost_ps[n_estimators=20,n_members=2]"}
    assert t["task_hash"].nunique() == 1
    text = (out / "report" / "report.md").read_text()
    assert "## The noise floor" in text


def test_noise_floor_against_a_hand_computation():
    rng = np.random.default_rng(0)
    rows, by_hand, at_task = [], [], {}
    for p in ("p0", "p1"):
        for s in (0, 1):
            values = {}
            for m in (None, 0, 5, 6):  # method_seed 0 at task seed 0 repeats the default fit
                fit = s if m is None else m
                v = values.setdefault(fit, float(rng.normal()))
                rows.append(
                    {
                        "preset": p,
                        "seed": s,
                        "status": "ok",
                        "method_seed": m,
                        "config_base": "a",
                        "spearman_eu": v,
                    }
                )
            by_hand.append(statistics.stdev(values.values()))
            at_task.setdefault(p, []).append(values[s])
    t = pd.DataFrame(rows)
    t["method_seed"] = t["method_seed"].astype("Int64")
    got = noise_floor(t, metrics=("spearman_eu",)).iloc[0]
    assert got["fixed_task_sd"] == pytest.approx(statistics.median(by_hand), rel=1e-12)
    data = statistics.median(statistics.stdev(v) for v in at_task.values())
    assert got["task_seed_sd"] == pytest.approx(data, rel=1e-12)
    assert got["tasks"] == 4 and got["fit_seeds"] == 3.5  # {0,5,6} at seed 0, {1,0,5,6} at 1
