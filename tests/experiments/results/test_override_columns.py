"""The results table's override columns are typed: one column per ``--set`` field, an
integer stays an integer beside runs that leave it unset, no cell holds JSON text, and
the types survive the parquet file the report and a release write."""

from __future__ import annotations

import pandas as pd
import pytest

from udora.experiments.results.store import load_runs, typed_column
from udora.experiments.run.execute import run_one
from udora.experiments.studies.robustness import family_of
from udora.experiments.studies.section import study_table
from udora.experiments.studies.study import Study

SETS = {  # what each blr run sets (a label to pick its row)
    "default": {},
    "seeded": {"alpha": 0.5, "preset.n_train": 30, "method_seed": 2},
    "warped": {"preset.truth": "warped", "preset.truth.warp": 3},
    "features": {"preset.truth": {"family": "features", "features": 32}},
    "shift": {"preset.shift": [0.7, 0.3, 0.0, 0.0, 0.0]},
}


@pytest.fixture
def table(tiny_preset, tmp_path):
    path, data = tiny_preset
    runs = {k: run_one(path, "blr", 0, v, tmp_path, data_dir=data) for k, v in SETS.items()}
    assert all(r.status == "ok" for r in runs.values())
    frame = load_runs(tmp_path)[0]
    by_dir = {str(r.path): k for k, r in runs.items()}
    return frame.set_index(frame["run_dir"].map(by_dir)), tmp_path


def test_each_field_is_a_typed_column(table):
    t, _ = table
    assert str(t["preset.n_train"].dtype) == "Int64" and str(t["method_seed"].dtype) == "Int64"
    assert t.loc["seeded", "preset.n_train"] == 30 and t.loc["seeded", "method_seed"] == 2
    assert t["preset.n_train"].isna().sum() == 4 and t["method_seed"].isna().sum() == 4
    assert str(t["alpha"].dtype) == "float64" and t.loc["seeded", "alpha"] == 0.5
    assert str(t["preset.truth"].dtype) == "string"
    assert t.loc["warped", "preset.truth"] == "warped" and t.loc["warped", "preset.truth.warp"] == 3
    # a mapping override is one column per entry, never a JSON text cell
    assert t.loc["features", "preset.truth.family"] == "features"
    assert t.loc["features", "preset.truth.features"] == 32
    assert str(t["preset.truth.features"].dtype) == "Int64"
    assert t.loc["shift", "preset.shift"] == (0.7, 0.3, 0.0, 0.0, 0.0)
    assert pd.isna(t.loc["features", "preset.truth"]) and pd.isna(t.loc["default", "alpha"])
    assert t.loc["seeded", "config_base"] == "blr[alpha=0.5,preset.n_train=30]"
    assert t.loc["features", "config"] == 'blr[preset.truth={"family":"features","features":32}]'


def test_the_types_survive_parquet_and_readers_use_them(table, tiny_preset, tmp_path):
    t, _ = table
    t.reset_index(drop=True).to_parquet(tmp_path / "t.parquet", index=False)
    back = pd.read_parquet(tmp_path / "t.parquet")
    for column in ("preset.n_train", "method_seed", "preset.truth.features", "preset.truth"):
        assert back[column].dtype == t[column].dtype, column
    expected = ["gp", "gp", "warped[warp=3]", "features[features=32]", "gp"]
    expected = dict(zip(SETS, expected, strict=True))
    assert family_of(t).to_dict() == expected
    assert family_of(back).tolist() == [expected[k] for k in t.index]
    shift = Study(
        name="s",
        factor="preset.shift",
        levels={"strong": [0.7, 0.3, 0.0, 0.0, 0.0], "none": [0.2] * 5},
        methods=["blr"],
        presets=[str(tiny_preset[0])],
        seeds=[0],
    )
    for frame in (t.reset_index(drop=True), back):  # tuples, and the arrays parquet gives back
        rows = study_table(frame, shift)
        assert rows["preset.shift"].tolist() == ["strong"]


def test_typed_column_picks_the_narrowest_type():
    assert typed_column([64, None, 128]).tolist() == [64, pd.NA, 128]
    assert str(typed_column([64, None]).dtype) == "Int64"
    assert str(typed_column([1, 0.5, None]).dtype) == "float64"
    assert str(typed_column([True, None]).dtype) == "boolean"
    mixed = typed_column([64, "wide", None, [1, 2]])
    assert str(mixed.dtype) == "string" and mixed.tolist() == ["64", "wide", pd.NA, "[1,2]"]
