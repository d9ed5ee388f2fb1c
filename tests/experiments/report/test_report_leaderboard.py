"""report.md's leaderboard says what each row is over (its presets) and why a cell is
empty, from the metrics' and methods' declarations: counted by hand on a made-up table,
then on real runs of two tiny presets."""

import numpy as np
import pandas as pd
import pytest
from tiny_presets import two_tiny_presets

from udora.experiments.report.gaps import footnotes, why_empty
from udora.experiments.report.write import write_report
from udora.experiments.results.summaries import method_summary
from udora.experiments.run.execute import run_one


def _row(config, method, preset, seed, au, status="ok", **extra):
    return {
        "preset": preset,
        "method": method,
        "config": config,
        "seed": seed,
        "status": status,
        "spearman_au": au,
        "spearman_eu": 0.4 if status == "ok" else np.nan,
        **extra,
    }


def _table() -> pd.DataFrame:
    rows = []
    for preset in ("p1", "p2", "p3"):
        for seed in (0, 1):
            rows.append(_row("blr", "blr", preset, seed, np.nan, external=False))
            rows.append(_row("nn_ensemble", "nn_ensemble", preset, seed, 0.3))
            rows.append(_row("broken", "swag", preset, seed, np.nan, status="failed"))
            rows.append(
                _row(
                    "mine (external)",
                    "mine",
                    preset,
                    seed,
                    np.nan,
                    external=True,
                    prediction_form="gaussian",
                )
            )
            # finite on p1 only: a partial mean, not an empty cell
            au = 0.2 if preset == "p1" else np.nan
            rows.append(_row("nn_dropout", "nn_dropout", preset, seed, au))
        rows.append(_row("swag", "swag", preset, 0, np.nan))  # per point, yet NaN
    table = pd.DataFrame(rows)
    table["external"] = table["external"].eq(True)
    return table


def test_each_empty_cell_gets_its_declared_reason():
    table = _table()
    assert why_empty(table, "blr", "spearman_au").startswith(
        'the method declares one aleatoric variance for every point, `aleatoric = "constant"`'
    )
    assert why_empty(table, "blr", "spearman_eu") != why_empty(table, "blr", "spearman_au")
    assert why_empty(table, "broken", "spearman_au") == "every run failed"
    external = why_empty(table, "mine (external)", "spearman_au")
    assert external.startswith("scored from a predictions file of the `gaussian` form")
    assert "no AU/EU split" in external
    assert why_empty(table, "swag", "spearman_au").startswith("no run has a finite value")


def test_the_footnotes_group_configs_by_reason_and_name_partial_means():
    table = _table()
    configs = ["blr", "broken", "mine (external)", "nn_dropout", "nn_ensemble", "swag"]
    lines = footnotes(table, ("spearman_au", "spearman_eu"), configs)
    au = [ln for ln in lines if ln.startswith("- `spearman_au`")]
    assert au[0].startswith("- `spearman_au` empty for `blr`: the method declares")
    assert au[1] == "- `spearman_au` empty for `broken`: every run failed."
    assert au[2].startswith("- `spearman_au` empty for `mine (external)`: scored from")
    assert au[3].startswith("- `spearman_au` empty for `swag`: no run has a finite value")
    assert au[4] == (
        "- `spearman_au` over fewer presets than the row's `presets` (the others have no "
        "finite value): `nn_dropout` (1 of 3)."
    )
    assert len(au) == 5
    eu = [ln for ln in lines if ln.startswith("- `spearman_eu`")]
    assert eu == ["- `spearman_eu` empty for `broken`: every run failed."]
    summary = method_summary(table).droplevel("method")
    presets = {"blr": 3, "broken": 0, "nn_dropout": 3, "nn_ensemble": 3, "swag": 3}
    assert summary["presets"].drop("mine (external)").to_dict() == presets


@pytest.mark.slow  # 3-14 s: the default set's budget
def test_report_md_counts_presets_per_row_and_says_why_au_is_empty(tmp_path):
    (a, b), data = two_tiny_presets(tmp_path)
    fast = {"n_members": 2, "n_estimators": 20}
    for preset in (a, b):
        for seed in (0, 1):
            assert run_one(preset, "blr", seed, {}, tmp_path / "runs", data_dir=data).status == "ok"
    assert run_one(a, "catboost_ps", 0, fast, tmp_path / "runs", data_dir=data).status == "ok"
    text = write_report(tmp_path / "runs").read_text()
    lines = text.splitlines()
    head = next(ln for ln in lines if ln.startswith("| method | config |"))
    columns = [c.strip() for c in head.strip("|").split("|")]
    rows = {}
    for ln in lines[lines.index(head) + 2 :]:
        if not ln.startswith("|"):
            break
        cells = dict(zip(columns, [c.strip() for c in ln.strip("|").split("|")], strict=True))
        rows[cells["config"]] = cells
    label = "catboost_ps[n_estimators=20,n_members=2]"
    assert (rows["blr"]["presets"], rows["blr"]["runs"]) == ("2", "4")
    assert (rows[label]["presets"], rows[label]["runs"]) == ("1", "1")
    assert rows["blr"]["spearman_au mean"] == "" and rows[label]["spearman_au mean"] != ""
    assert rows[label]["spearman_au sd"] == ""  # one preset: no sd, as the intro says
    assert "`presets` counts the presets a row is averaged over" in text
    assert (
        "- `spearman_au` empty for `blr`: the method declares one aleatoric variance for "
        'every point, `aleatoric = "constant"`' in text
    )
    assert "Not shown: `blr`: the method declares" in text  # the per-preset AU table
