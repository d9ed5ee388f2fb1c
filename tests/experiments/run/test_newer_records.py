"""A run a newer udora wrote is left alone: never overwritten by a grid or a single run,
said in one line, and skipped by the readers (issue: bench overwrote it)."""

from __future__ import annotations

import json
import warnings

from udora.experiments.grid.bench import make_grid, run_grid
from udora.experiments.run.execute import run_one
from udora.experiments.run.records import read_run


def _make_newer(path):
    record = json.loads((path / "result.json").read_text())
    record["schema"] = 3
    record["versions"]["udora"] = "9.0.0"
    record["status"] = "failed"  # so an older udora would otherwise rerun it
    (path / "result.json").write_text(json.dumps(record))
    return (path / "result.json").read_bytes()


def test_a_grid_leaves_a_newer_record_alone_and_says_so(tiny_preset, tmp_path, capsys):
    path, data = tiny_preset
    out = tmp_path / "res"
    first = run_one(path, "blr", 0, None, out, data_dir=data)
    before = _make_newer(first.path)
    found = read_run(first.path)
    assert not found.usable and found.newer == "schema 3, udora 9.0.0"
    summary = run_grid(make_grid([str(path)], ["blr"], [0, 1], data_dir=data), out, data_dir=data)
    assert (summary.done, summary.not_run) == (1, 1)  # seed 1 ran; seed 0 was left alone
    assert (first.path / "result.json").read_bytes() == before
    assert "left alone" in capsys.readouterr().out


def test_a_single_run_does_not_overwrite_it_either(tiny_preset, tmp_path):
    path, data = tiny_preset
    first = run_one(path, "blr", 0, None, tmp_path / "res", data_dir=data)
    before = _make_newer(first.path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_one(path, "blr", 0, None, tmp_path / "res", data_dir=data)
    assert (first.path / "result.json").read_bytes() == before
    assert any("newer udora (schema 3, udora 9.0.0); left alone" in str(w.message) for w in caught)
