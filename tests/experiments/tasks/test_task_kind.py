"""The task-kind seam (docs/design.md, "Task kinds"): a test-only kind, with its own preset
schema, task, prediction type, metric and method, goes through resolve, run, grid,
record, disk cache and report, registered from this file alone (no regression file knows
it), and is kept apart from regression runs in the same folder.

The dummy task: a real table's rows (a CSV in a temporary data folder), the target
``level + x``; a method guesses one constant per task; the metric is the mean absolute
error of the guess against the target, computed here independently of the runner.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar, Literal

import numpy as np
import pandas as pd
import pytest
import yaml
from pydantic import BaseModel, ConfigDict

from udora.errors import UserError
from udora.experiments.grid.bench import make_grid, run_grid
from udora.experiments.report.sections import register_section, unregister_section
from udora.experiments.report.write import write_report
from udora.experiments.results.sections import ReportSection
from udora.experiments.run.checks import UsageError
from udora.experiments.run.execute import _cached_task, run_one
from udora.experiments.run.records import read_run
from udora.experiments.tasks.kinds import RunKind, register_run_kind, unregister_run_kind
from udora.methods.base import MethodConfig, UQMethod
from udora.methods.prediction import (
    PredictionError,
    register_prediction_type,
    unregister_prediction_type,
)
from udora.methods.registry import register, unregister
from udora.oracle.data import load_table_with_source
from udora.oracle.kinds import TaskKind, register_kind, unregister_kind
from udora.oracle.preset import Source
from udora.oracle.prior import TaskKnowledge
from udora.scoring.declaration import Metric
from udora.scoring.registry import metrics, register_metric, unregister_metric

KIND = "dummy"
BUILDS: list[int] = []  # one entry per task the builder built (the disk cache skips it)


class DummyPreset(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    TASK_FIELDS: ClassVar[tuple[str, ...]] = ("source", "features", "target", "n_train", "level")

    kind: Literal["dummy"] = KIND
    name: str
    suite: Literal["toy"] = "toy"
    source: Source
    features: tuple[str, ...]
    target: str = "target"
    n_train: int
    level: float = 0.0


class DummyTask:
    """Pool ``X`` (N, 1), training rows, and the exact target ``truth`` (N,)."""

    def __init__(self, preset, seed, X, train_idx, truth, meta=None):
        self.preset, self.seed, self.X = preset, seed, X
        self.train_idx, self.truth, self.meta = train_idx, truth, dict(meta or {})
        self.y_train = truth[train_idx]

    @property
    def X_train(self):
        return self.X[self.train_idx]

    def knowledge(self, *, with_prior=False):
        return TaskKnowledge(tuple(self.preset.features), self.X.shape[1], len(self.train_idx))

    def fingerprint(self) -> str:
        return str(hash((self.X.tobytes(), self.truth.tobytes(), self.train_idx.tobytes())))

    def to_arrays(self):
        return {"X": self.X, "train_idx": self.train_idx, "truth": self.truth}


def build(preset, seed, *, data_dir=None):
    BUILDS.append(seed)
    X, _, source = load_table_with_source(preset, data_dir)
    rows = np.random.default_rng(seed).choice(X.shape[0], preset.n_train, replace=False)
    truth = preset.level + X[:, 0]
    return DummyTask(preset, seed, X, np.sort(rows), truth, {"data_source": source.to_dict()})


def load(preset, seed, arrays, meta):
    return DummyTask(preset, seed, arrays["X"], arrays["train_idx"], arrays["truth"], meta)


class DummyPrediction:
    kind: ClassVar[str] = KIND
    FIELDS: ClassVar[tuple[str, ...]] = ("guess",)
    OPTIONAL: ClassVar[tuple[str, ...]] = ()

    def __init__(self, guess):
        guess = np.asarray(guess, dtype=np.float64)
        if guess.ndim != 1 or not np.all(np.isfinite(guess)):
            raise PredictionError("DummyPrediction.guess: expected finite values, shape (n,)")
        self.guess = guess

    def to_arrays(self):
        return {"guess": self.guess}


def score(task, prediction) -> dict[str, float]:
    return {"abs_error": float(np.mean(np.abs(prediction.guess - task.truth)))}


def standard_errors(task, prediction) -> dict[str, float]:
    """As a sampled oracle would give them: here the error of the mean over the pool."""
    errors = np.abs(prediction.guess - task.truth)
    return {"abs_error": float(np.std(errors, ddof=1) / np.sqrt(errors.size))}


ABS_ERROR = Metric(
    "abs_error",
    "mean absolute error of the guess",
    "target",
    "lower",
    frozenset({"oracle", "mean"}),
    tasks=frozenset({KIND}),
    roles={"ranked": 0},
    digits=6,
)


def section(context) -> list[str]:
    """The dummy kind's report section: its ranked metrics per config and preset."""
    lines = ["## Dummy tasks", ""]
    for m in metrics(KIND, "ranked"):
        means = context.table.groupby(["config", "preset"])[m.name].mean().unstack()
        lines += [f"{m.label} ({m.better} is better):", "", context.markdown(means, m.digits), ""]
    return lines


class MeanGuess(UQMethod):
    """Guesses the training mean plus ``shift`` everywhere."""

    kinds = (KIND,)

    class Config(MethodConfig):
        shift: float = 0.0

    def fit(self, X, y, *, seed, knowledge=None):
        self.mean_ = float(np.mean(y)) + self.config.shift
        self.fitted_ = True
        return self

    def predict(self, X):
        return DummyPrediction(np.full(X.shape[0], self.mean_))


class BrokenGuess(MeanGuess):
    """Returns a prediction object that was made invalid after it was built."""

    def predict(self, X):
        out = DummyPrediction(np.full(X.shape[0], self.mean_))
        out.guess[0] = np.nan  # changed after construction: only the stored copy shows it
        return out


@pytest.fixture
def dummy_kind(tmp_path, monkeypatch):
    """The dummy kind registered in every layer, a data folder with its table, a preset."""
    BUILDS.clear()
    register_kind(
        TaskKind(KIND, DummyPreset, build, suites=("toy",), cache_on_disk=True, load=load)
    )
    register_prediction_type(DummyPrediction)
    register_run_kind(RunKind(KIND, score, None, lambda task: task.to_arrays(), standard_errors))
    register("mean_guess")(MeanGuess)
    register("broken_guess")(BrokenGuess)
    register_section(ReportSection("dummy", "Dummy tasks", 90, section, kind=KIND))
    register_metric(ABS_ERROR)
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)  # shared with the tiny regression preset's table
    x = np.linspace(0.0, 1.0, 40)
    pd.DataFrame({"x": x, "target": np.zeros_like(x)}).to_csv(data / "toy.csv", index=False)
    monkeypatch.setenv("UDORA_DATA_DIR", str(data))
    monkeypatch.setenv("UDORA_TASK_CACHE", str(tmp_path / "cache"))
    preset = tmp_path / "toy.yaml"
    spec = {"kind": KIND, "name": "toy", "source": {"file": "toy.csv"}, "features": ["x"]}
    preset.write_text(yaml.safe_dump({**spec, "n_train": 10, "level": 2.0}))
    _cached_task.cache_clear()
    yield preset, data
    _cached_task.cache_clear()
    unregister_section("dummy")
    unregister_metric("abs_error")
    for name in ("mean_guess", "broken_guess"):
        unregister(name)
    unregister_run_kind(KIND)
    unregister_prediction_type(KIND)
    unregister_kind(KIND)


def expected_error(data: Path, seed: int, shift: float = 0.0) -> float:
    """The metric computed here from the table: the guess is the training rows' mean."""
    x = pd.read_csv(data / "toy.csv")["x"].to_numpy()
    rows = np.random.default_rng(seed).choice(x.size, 10, replace=False)
    truth = 2.0 + x
    return float(np.mean(np.abs(truth[rows].mean() + shift - truth)))


def test_a_run_of_another_kind_is_scored_by_its_kind(dummy_kind, tmp_path):
    preset, data = dummy_kind
    res = run_one(preset, "mean_guess", 3, {"shift": 0.5}, tmp_path / "res")
    assert res.status == "ok", res.error
    assert res.metrics["abs_error"] == pytest.approx(expected_error(data, 3, 0.5), rel=1e-12)
    x = pd.read_csv(data / "toy.csv")["x"].to_numpy()
    rows = np.random.default_rng(3).choice(x.size, 10, replace=False)
    errors = np.abs((2.0 + x)[rows].mean() + 0.5 - (2.0 + x))
    se = float(np.sqrt(np.sum((errors - errors.mean()) ** 2) / (x.size - 1) / x.size))
    found = read_run(res.path)
    assert found.usable, found.problem
    record = found.record
    assert record.kind == KIND and set(record.metrics) == {"abs_error"}
    assert record.metrics_se["abs_error"] == pytest.approx(se, rel=1e-12)
    assert record.identity["task"]["kind"] == KIND  # the kind enters the task hash
    with np.load(res.path / "predictions.npz") as z:
        assert z.files == ["guess"]
    stored = tmp_path / "res" / "oracle" / f"{record.task_hash}.json"
    assert json.loads(stored.read_text())["sha256"] == record.oracle_sha256


def test_what_is_stored_decides_the_outcome(dummy_kind, tmp_path):
    preset, _ = dummy_kind
    res = run_one(preset, "broken_guess", 0, None, tmp_path / "res")
    assert res.status == "failed"
    assert "DummyPrediction.guess" in res.error
    assert not (res.path / "predictions.npz").exists()


def test_a_method_of_another_kind_is_refused_before_anything_runs(dummy_kind, tmp_path):
    preset, _ = dummy_kind
    with pytest.raises(UsageError, match=r"blr does not support dummy tasks.*supports: regression"):
        run_one(preset, "blr", 0, None, tmp_path / "res")
    assert not (tmp_path / "res").exists() and BUILDS == []


def test_an_expensive_task_is_built_once_per_machine(dummy_kind, tmp_path):
    preset, data = dummy_kind
    first = run_one(preset, "mean_guess", 1, None, tmp_path / "a")
    _cached_task.cache_clear()  # a new process: only the disk cache remains
    second = run_one(preset, "mean_guess", 1, {"shift": 1.0}, tmp_path / "b")
    assert BUILDS == [1]
    assert second.metrics["abs_error"] == pytest.approx(expected_error(data, 1, 1.0), rel=1e-12)
    assert first.run.task_hash == second.run.task_hash


def test_a_folder_holding_other_sampled_arrays_of_the_task_is_refused(dummy_kind, tmp_path):
    """A run records the checksum of the arrays it was scored on: when its results folder
    already holds other arrays of its task (another build's draws), it is refused naming
    the stored file, instead of recording the stored arrays' checksum for its own."""
    from udora.experiments.tasks import arrays as oracle_arrays

    preset, _ = dummy_kind
    first = run_one(preset, "mean_guess", 1, None, tmp_path / "res")
    root, task_hash = tmp_path / "res", first.run.task_hash
    entry, arrays = oracle_arrays.load_arrays(root, task_hash)
    for path in oracle_arrays.paths(root, task_hash):
        path.unlink()
    name = next(k for k, v in arrays.items() if np.asarray(v).dtype.kind == "f")
    other = {**arrays, name: np.asarray(arrays[name]) + 1.0}  # another build's draws
    oracle_arrays._write(root, task_hash, other, {k: v for k, v in entry.items() if k != "sha256"})
    with pytest.raises(UserError, match=rf"{task_hash}\.npz: the stored oracle arrays of task"):
        run_one(preset, "mean_guess", 1, {"shift": 1.0}, root)
    again = run_one(preset, "mean_guess", 1, {"shift": 1.0}, tmp_path / "fresh")
    sha = [read_run(r.path).record.oracle_sha256 for r in (first, again)]
    assert sha[0] == sha[1] and len(sha[0]) == 64  # the same build's arrays, the same sum


def test_packed_arrays_read_back_as_the_stored_files_do():
    """A build in another process sends its record and arrays back packed, not through a
    scratch file (which a killed process would leave behind): read back, they are what
    storing and loading the files gives, record (a NaN and a tuple in the meta, an
    object left out) and arrays bit for bit."""
    import tempfile
    from types import SimpleNamespace

    from udora.experiments.tasks import arrays as oracle_arrays
    from udora.oracle.preset import load_preset

    rng = np.random.default_rng(3)
    arrays = {"f": rng.normal(size=(5, 1)), "prob": rng.dirichlet([1, 1, 1], 5), "y": np.arange(5)}
    meta = {"nan": float("nan"), "pair": (1, 2), "obj": object(), "text": "x"}
    task = SimpleNamespace(seed=4, preset=load_preset("pima"), meta=meta)
    entry, back = oracle_arrays.unpacked(*oracle_arrays.packed(task, arrays), "the build")
    with tempfile.TemporaryDirectory() as root:
        oracle_arrays.store(root, "t", task, arrays)
        stored_entry, stored = oracle_arrays.load_arrays(root, "t")
    assert sorted(back) == sorted(stored) == sorted(arrays)
    for name in arrays:
        assert back[name].dtype == stored[name].dtype
        np.testing.assert_array_equal(back[name], stored[name])
    stored_entry = {k: v for k, v in stored_entry.items() if k not in ("sha256", "task_hash")}
    entry.pop("task_hash")
    assert json.dumps(entry, sort_keys=True) == json.dumps(stored_entry, sort_keys=True)
    assert entry["meta"]["pair"] == [1, 2] and "obj" not in entry["meta"]


@pytest.mark.slow  # seconds each: in the slow set (CI runs it)
def test_a_grid_of_two_kinds_keeps_them_apart(tiny_preset, dummy_kind, tmp_path):
    preset, data = dummy_kind
    out = tmp_path / "grid"
    runs = make_grid([str(preset)], ["mean_guess"], [0, 1], data_dir=data)
    runs += make_grid([str(tiny_preset[0])], ["blr"], [0], data_dir=data)
    summary = run_grid(runs, out, jobs=1, data_dir=data)
    assert summary.ok and summary.done == 3
    records = [read_run(p.parent).record for p in sorted(out.glob("*/*/*/seed-*/result.json"))]
    kinds = sorted((r.kind, r.method) for r in records)
    assert kinds == [("dummy", "mean_guess"), ("dummy", "mean_guess"), ("regression", "blr")]
    for r in records:
        if r.kind == KIND:
            assert r.metrics["abs_error"] == pytest.approx(expected_error(data, r.seed), rel=1e-12)

    write_report(out, out / "report", data_dir=str(data))
    text = (out / "report" / "report.md").read_text()
    table = pd.read_csv(out / "report" / "results.csv")
    assert sorted(table["kind"]) == ["dummy", "dummy", "regression"]
    dummy = table[table["kind"] == "dummy"]
    assert dummy["se.abs_error"].notna().all() and table["se.abs_error"].isna().sum() == 1
    mine = np.mean([expected_error(data, s) for s in (0, 1)])
    dummy_part = text[text.index("## Dummy tasks") :]
    assert "mean absolute error of the guess (lower is better)" in dummy_part
    assert f"{mine:.6f}" in dummy_part.split("\n\n")[2]  # the section's table, seeds averaged
    summary = text[text.index("## Per method and config") : text.index("## Dummy tasks")]
    assert "blr" in summary and "mean_guess" not in summary  # the leaderboard is regression's
    assert (out / "report" / "dummy.html").is_file()


def test_a_folder_of_another_kind_alone_gets_its_report(dummy_kind, tmp_path):
    preset, data = dummy_kind
    out = tmp_path / "grid"
    assert run_grid(make_grid([str(preset)], ["mean_guess"], [0], data_dir=data), out).ok
    write_report(out, out / "report", data_dir=str(data))
    text = (out / "report" / "report.md").read_text()
    assert "## Dummy tasks" in text and "## Per method and config" not in text
    index = (out / "report" / "index.html").read_text()
    assert 'href="dummy.html"' in index


def test_a_metric_nobody_declared_fails_the_run(dummy_kind, tmp_path):
    preset, _ = dummy_kind
    unregister_run_kind(KIND)
    register_run_kind(
        RunKind(KIND, lambda t, p: {**score(t, p), "stray": 0.0}, None, lambda t: t.to_arrays())
    )
    res = run_one(preset, "mean_guess", 0, None, tmp_path / "res")
    assert res.status == "failed" and "undeclared metrics ['stray']" in res.error
