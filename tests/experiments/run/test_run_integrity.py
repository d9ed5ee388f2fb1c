"""Nothing a method or a damaged file does corrupts a result in silence.

A method cannot change the cached task that later runs read, and every reader of run
folders (bench's resume, the results table, the report, meta) goes through
:func:`udora.experiments.run.records.read_run`: each way of damaging each file of a run is
caught by each reader (docs/running.md, "What a finished run is").
"""

import json
import shutil
import warnings

import numpy as np
import pytest
from rich.console import Console
from tiny_presets import one_tiny_preset

from udora.experiments.grid.bench import make_grid, run_grid
from udora.experiments.meta.cells import load_cells
from udora.experiments.report.write import write_report
from udora.experiments.results.store import UnreadableRunWarning, load_runs
from udora.experiments.run import execute
from udora.experiments.run.execute import record_failed, run_one
from udora.experiments.run.records import read_run
from udora.methods import register
from udora.methods.base import MethodConfig, Prediction, UQMethod
from udora.methods.registry import unregister


class _Config(MethodConfig):
    pass


class _ChangesItsInputs(UQMethod):
    """Centres ``y`` in place in ``fit`` and zeroes ``X`` in place in ``predict``."""

    Config = _Config

    def fit(self, X, y, *, seed, knowledge=None):
        y -= y.mean()
        self.mu_ = 0.0
        return self

    def predict(self, X):
        X[:] = 0.0
        return Prediction(self.mu_ + X[:, 0], 1.0 + X[:, 0], 1.0 + X[:, 0])


class _ChangesThePrior(_ChangesItsInputs):
    """A reference method that shifts the task prior's feature means in place."""

    uses_task_prior = True

    def fit(self, X, y, *, seed, knowledge=None):
        knowledge.prior.standardiser.x_mean[...] += 1.0
        self.mu_ = float(y.mean())
        return self


@pytest.fixture
def mutating_methods():
    register("t_inputs")(_ChangesItsInputs)
    register("t_prior")(_ChangesThePrior)
    yield
    unregister("t_inputs")
    unregister("t_prior")


def test_a_method_changing_its_inputs_leaves_later_runs_as_they_were(
    tiny_preset, tmp_path, mutating_methods
):
    path, data = tiny_preset
    execute._cached_task.cache_clear()
    clean = run_one(path, "blr", 0, {}, tmp_path / "a", data_dir=data)
    changer = run_one(path, "t_inputs", 0, {}, tmp_path / "a", data_dir=data)
    assert changer.status == "ok"  # it changed its own copies only
    after = run_one(path, "blr", 0, {}, tmp_path / "b", data_dir=data)  # same cached task
    assert after.metrics == clean.metrics and np.isfinite(clean.metrics["spearman_eu"])


def test_a_method_changing_the_prior_fails_and_the_task_is_rebuilt(
    tiny_preset, tmp_path, mutating_methods
):
    path, data = tiny_preset
    execute._cached_task.cache_clear()
    reference = run_one(path, "gp_oracle", 0, {}, tmp_path / "a", data_dir=data)
    changer = run_one(path, "t_prior", 0, {}, tmp_path / "a", data_dir=data)
    assert changer.status == "failed"
    assert "changed the task's arrays or prior in place" in changer.error
    again = run_one(path, "gp_oracle", 0, {}, tmp_path / "b", data_dir=data)
    assert again.metrics == reference.metrics


# --------------------------------------------------------------------------- damaged runs


def _truncate(p):
    p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2])


def _empty(p):
    p.write_bytes(b"")


def _remove(p):
    p.unlink()


def _not_utf8(p):
    p.write_bytes(p.read_bytes() + b"\xff\xfe")


def _json_edit(**changes):
    def edit(p):
        record = json.loads(p.read_text())
        for key, value in changes.items():
            if key == "metric":
                record["metrics"]["spearman_eu"] = value
            else:
                record[key] = value
        p.write_text(json.dumps(record))

    return edit


def _other_arrays(p):  # a whole, readable archive, but not the one the record hashed
    with np.load(p) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["mean"] = arrays["mean"] + 1.0
    np.savez(p, **arrays)


DAMAGE = {
    "result.json truncated": ("result.json", _truncate, "is not valid JSON"),
    "result.json empty": ("result.json", _empty, "is not valid JSON"),
    "result.json missing": ("result.json", _remove, "is missing"),
    "status of the wrong type": ("result.json", _json_edit(status=5), "'status' of the wrong"),
    "metric of the wrong type": ("result.json", _json_edit(metric="high"), "'metrics.spearman_eu'"),
    "seed of the wrong type": ("result.json", _json_edit(seed="0"), "'seed' of the wrong type"),
    "identity edited": ("result.json", _json_edit(identity={"x": 1}), "hash is not its config"),
    "task hash edited": ("result.json", _json_edit(task_hash="0123456789"), "a task_hash that"),
    "schema of the wrong type": ("result.json", _json_edit(schema="2"), "'schema' of the wrong"),
    "an unknown key": ("result.json", _json_edit(stauts="ok"), "has the unknown key 'stauts'"),
    "code incomplete": ("result.json", _json_edit(code={}), "lacks the key 'code.source_sha256'"),
    "result.json not UTF-8": ("result.json", _not_utf8, "is not UTF-8 text"),
    "predictions truncated": ("predictions.npz", _truncate, "does not match its checksum"),
    "predictions empty": ("predictions.npz", _empty, "does not match its checksum"),
    "predictions missing": ("predictions.npz", _remove, "lists predictions.npz, which is missing"),
    "predictions of another run": ("predictions.npz", _other_arrays, "does not match its check"),
}


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """A results folder with blr at seeds 0 and 1 on a tiny preset, and the grid of it."""
    root = tmp_path_factory.mktemp("runs")
    _, data = one_tiny_preset(root)
    runs = make_grid([str(root / "tiny.yaml")], ["blr"], [0, 1], {}, data_dir=data)
    summary = run_grid(runs, root / "results", data_dir=data, console=Console(file=None))
    assert summary.done == 2 and summary.failed == 0
    return root / "results", runs, data


@pytest.fixture
def damaged(two_runs, tmp_path, request):
    """A copy of the results with seed 0's file damaged as ``request.param`` says."""
    results, runs, data = two_runs
    copy = tmp_path / "results"
    shutil.copytree(results, copy, ignore=shutil.ignore_patterns("report", ".udora-lock"))
    name, damage, message = DAMAGE[request.param]
    folder = runs[0].run_dir(copy)
    damage(folder / name)
    return copy, runs, data, folder, message


# three kinds in the default run; every kind in the slow set (each runs four readers, ~3 s)
QUICK = (
    "predictions truncated",
    "status of the wrong type",
    "result.json missing",
    "schema of the wrong type",
)


@pytest.mark.parametrize(
    "damaged",
    [k if k in QUICK else pytest.param(k, marks=pytest.mark.slow) for k in sorted(DAMAGE)],
    indirect=True,
)
def test_every_reader_catches_every_damage(damaged):
    results, runs, data, folder, message = damaged
    found = read_run(folder)
    assert not found.finished and message in found.problem, found.problem

    with pytest.warns(UnreadableRunWarning, match=str(folder)):
        table, _ = load_runs(results)
    assert table["seed"].tolist() == [1]  # the damaged run is out, the other one in

    from typer.testing import CliRunner

    from udora.experiments.cli.main import app

    meta = CliRunner().invoke(app, ["meta", str(results), "--sizes", ""])  # too few: exit 2
    assert f"warning: skipped {folder / 'result.json'}: " in meta.output, meta.output

    before = table.assign(seed=0, run_dir=str(folder))  # a row read before the damage
    with pytest.raises(ValueError, match=str(folder)):
        load_cells(before, min_methods=1, data_dir=str(data))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnreadableRunWarning)
        report = write_report(results).read_text()
    assert "Skipped 1 unreadable result.json" in report and str(folder) in report
    assert (results / "report" / "index.html").is_file()

    console = Console(record=True, width=200)
    summary = run_grid(runs, results, data_dir=data, console=console)
    assert (summary.done, summary.skipped, summary.failed) == (1, 1, 0)  # rerun, once
    assert f"rerunning {runs[0].rel_dir}: its result.json" in console.export_text()
    assert read_run(folder).finished


def test_the_record_read_is_the_json_written(two_runs):
    """Reading a run gives its typed record (no field lost, none added): written again it
    is the same result.json, key for key and in the same order."""
    results, runs, _ = two_runs
    for run in runs:
        path = run.run_dir(results) / "result.json"
        found = read_run(path.parent)
        assert found.finished and found.record.seed == run.seed
        assert found.record.to_json() == path.read_text()
        assert list(json.loads(found.record.to_json())) == list(json.loads(path.read_text()))


def test_a_finished_run_is_never_replaced_by_a_failed_record(two_runs, tmp_path):
    """A worker presumed dead whose run finished meanwhile: the failed record written for
    it is discarded and the finished run kept; a failed run is replaced by the next one."""
    results, runs, _ = two_runs
    copy = tmp_path / "results"
    shutil.copytree(results, copy, ignore=shutil.ignore_patterns("report", ".udora-lock"))
    folder = runs[0].run_dir(copy)
    text = (folder / "result.json").read_text()
    record_failed(runs[0], copy, "the worker process running it died of SIGKILL")
    assert (folder / "result.json").read_text() == text and read_run(folder).finished
    shutil.rmtree(folder)
    record_failed(runs[0], copy, "first attempt")
    record_failed(runs[0], copy, "second attempt")
    assert read_run(folder).record.error == "second attempt"
    assert sorted(p.name for p in folder.parent.iterdir()) == ["seed-0", "seed-1"]  # no .tmp


def test_a_copied_run_folder_is_not_counted_twice(two_runs, tmp_path):
    results, runs, _ = two_runs
    copy = tmp_path / "results"
    shutil.copytree(results, copy, ignore=shutil.ignore_patterns("report", ".udora-lock"))
    original = runs[0].run_dir(copy)
    twin = original.parent.parent / "0123456789" / "seed-0"
    shutil.copytree(original, twin)
    assert "not of the folder it is in" in read_run(twin).problem
    with pytest.warns(UnreadableRunWarning, match="copied or renamed"):
        table, _ = load_runs(copy)
    assert sorted(table["seed"]) == [0, 1]


def test_meta_reads_each_task_stored_beside_its_runs_and_builds_no_gp(two_runs, monkeypatch):
    """Each run stored its task's arrays once (one file per task hash); meta's cells read
    them, so it builds no Gaussian process, and they equal a fresh build exactly."""
    import udora.oracle.task as oracle_task
    from udora.experiments.tasks import arrays as oracle_arrays
    from udora.oracle.preset import Preset

    results, runs, data = two_runs
    hashes = sorted(run.task_hash for run in runs)
    assert sorted(p.stem for p in (results / "oracle").glob("*.npz")) == hashes
    table, _ = load_runs(results)
    build = oracle_task.build_task
    builds = []
    monkeypatch.setattr(
        oracle_task, "build_task", lambda *a, **k: builds.append(a) or build(*a, **k)
    )
    cells = load_cells(table, min_methods=1, data_dir=str(data))
    assert builds == [] and len(cells) == 2
    for cell, run in zip(cells, sorted(runs, key=lambda r: r.seed), strict=True):
        fresh = build(Preset.model_validate(run.preset.model_dump()), run.seed, data_dir=data)
        for name in oracle_arrays.ARRAYS:
            np.testing.assert_array_equal(getattr(cell.task, name), getattr(fresh, name))


def test_a_damaged_stored_task_is_an_error_naming_its_file(two_runs, tmp_path):
    results, runs, data = two_runs
    copy = tmp_path / "results"
    shutil.copytree(results, copy, ignore=shutil.ignore_patterns("report", ".udora-lock"))
    npz = copy / "oracle" / f"{runs[0].task_hash}.npz"
    npz.write_bytes(npz.read_bytes()[:-10])
    table, _ = load_runs(copy)
    with pytest.raises(ValueError, match=f"{npz}: does not match the checksum"):
        load_cells(table, min_methods=1, data_dir=str(data))
