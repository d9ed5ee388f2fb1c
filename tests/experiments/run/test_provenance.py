"""What ran a run (udora.experiments.run.provenance): the source's SHA-256 and commit, and
the cores, recorded in every result.json and carried into a release's rows."""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from processes import compute_of_worker

from udora.experiments.grid.executors import run_all
from udora.experiments.grid.local import LocalPool
from udora.experiments.publish.artefact import build_release, code_line
from udora.experiments.run.execute import record_skipped, run_one
from udora.experiments.run.spec import RunSpec, resolve
from udora.methods.base import Prediction, UQMethod
from udora.methods.registry import register, unregister

ROOT = Path(__file__).resolve().parents[3]


def _repository_source_sha256() -> str:
    """The documented hash over the repository's own folders (not the imported package):
    every .py of src/udora/ (not below it) named by its file name, and every .py and .yaml below
    oracle/, scoring/, methods/, experiments/, presets/, named ``<folder>/<relative path>``,
    sorted, each as name NUL content NUL."""
    names = [(path.name, path) for path in (ROOT / "src" / "udora").glob("*.py")]
    assert {"__init__.py"} <= {name for name, _ in names}
    for folder in ("oracle", "scoring", "methods", "experiments", "presets"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix in (".py", ".yaml") and "__pycache__" not in path.parts:
                names.append((f"{folder}/{path.relative_to(ROOT / folder).as_posix()}", path))
    digest = hashlib.sha256()
    for name, path in sorted(names):
        digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _expected_commit() -> str | None:
    """HEAD of the checkout udora was imported from, or None (an installed wheel): the
    imported oracle/task.py is this repository's file exactly when udora runs from it."""
    imported = Path(importlib.import_module("udora.oracle.task").__file__).resolve()
    if imported != (ROOT / "oracle" / "task.py").resolve():
        return None
    found = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    )
    return found.stdout.strip()


def test_a_run_records_the_code_and_the_cores_it_ran_on(tiny_preset, tmp_path):
    path, data = tiny_preset
    result = run_one(path, "blr", 0, {}, tmp_path, data_dir=data)
    record = json.loads((result.path / "result.json").read_text())
    assert record["code"]["source_sha256"] == _repository_source_sha256()
    assert record["code"]["commit"] == _expected_commit()
    assert record["compute"]["cpus"] == len(os.sched_getaffinity(0))
    assert record["compute"]["jax_backend"] == "cpu"


class _Constant(UQMethod):
    """A plugin that declares no libraries: the training mean, unit variances."""

    def fit(self, X, y, *, seed, knowledge=None):
        self.mu_ = float(np.mean(y))
        return self

    def predict(self, X):
        n = X.shape[0]
        return Prediction(np.full(n, self.mu_), np.ones(n), np.ones(n))


def _installed(*names: str) -> dict[str, str]:
    return {n: importlib.metadata.version(n) for n in names}


def test_versions_are_what_a_method_declares_never_guessed_from_its_name(tiny_preset, tmp_path):
    """A plugin named like the GP methods declares nothing and records udora and JAX only;
    dkl records the libraries it declares, at their installed versions."""
    path, data = tiny_preset
    register("gp_x")(_Constant)
    try:
        result = run_one(path, "gp_x", 0, {}, tmp_path, data_dir=data)
    finally:
        unregister("gp_x")
    assert result.status == "ok"
    record = json.loads((result.path / "result.json").read_text())
    assert record["versions"] == _installed("udora", "jax")
    dkl = resolve(RunSpec(str(path), "dkl", 0, {}), data)
    folder = record_skipped(dkl, tmp_path, "not run: the record is what is tested")
    record = json.loads((folder / "result.json").read_text())
    assert record["versions"] == _installed("udora", "jax", "flax", "gpjax", "equinox", "optax")


@pytest.mark.slow  # seconds each: in the slow set (CI runs it)
def test_a_pinned_pool_worker_records_one_core(tmp_path):
    seen = {}
    run_all(
        LocalPool(2, 1, tmp_path / "inflight"),
        [(k,) for k in range(4)],
        compute_of_worker,
        lambda a, v: seen.setdefault(v[0], v[1]),
        lambda a, why: None,
    )
    assert len(seen) == 2
    for compute in seen.values():
        assert compute["cpus"] == 1
        assert compute["threads"] == {"omp": "1", "openblas": "1", "xla_multi_thread_eigen": False}


def test_a_release_keeps_each_runs_commit_and_fills_only_missing_ones(tiny_preset, tmp_path):
    path, data = tiny_preset
    for seed in (0, 1):
        assert run_one(path, "blr", seed, {}, tmp_path / "dev", data_dir=data).status == "ok"
    records = sorted((tmp_path / "dev").glob("*/*/*/seed-*/result.json"))
    first = json.loads(records[0].read_text())
    first["code"]["commit"] = "1234abcd"  # as a run of another checkout would record
    records[0].write_text(json.dumps(first))
    with pytest.raises(ValueError, match="ran commit 1234abcd, not 5678"):
        build_release([tmp_path / "dev"], tmp_path / "rel", "5678")
    second = json.loads(records[1].read_text())
    second["code"].update(commit="1234abcd", dirty=True)  # uncommitted changes ran
    records[1].write_text(json.dumps(second))
    first["code"]["dirty"] = False
    records[0].write_text(json.dumps(first))
    marked = json.loads(build_release([tmp_path / "dev"], tmp_path / "rel").read_text())
    assert marked["dirty_runs"] == 1
    assert "1 runs had uncommitted changes" in code_line(marked)
    second["code"].update(commit=None, dirty=None)  # a run from an installed wheel
    records[1].write_text(json.dumps(second))
    manifest = json.loads(build_release([tmp_path / "dev"], tmp_path / "rel", "1234").read_text())
    assert manifest["commit"] == ["1234abcd"]  # the prefix named the recorded commit
    assert manifest["source_sha256"] == [_repository_source_sha256()]
    assert manifest["cpus"] == [len(os.sched_getaffinity(0))]


def test_one_job_on_fewer_cores_runs_in_one_pinned_worker(tmp_path):
    """``--jobs 1 --cpus-per-run 1`` (rerunning a release row on the cores it recorded) is a
    pinned worker, not the command's own process with all its cores."""
    from udora.experiments.grid.executors import ExecutorSpec

    executor = ExecutorSpec("local", 1, None, 1).check().make(tmp_path / "inflight")
    seen = {}
    run_all(
        executor,
        [(0,)],
        compute_of_worker,
        lambda a, v: seen.setdefault(v[0], v[1]),
        lambda a, why: None,
    )
    (compute,) = seen.values()
    assert compute["cpus"] == 1
    if len(os.sched_getaffinity(0)) > 1:
        assert next(iter(seen)) != os.getpid(), "a worker process, not this one"
    everything = ExecutorSpec("local", 1, None, len(os.sched_getaffinity(0))).check()
    assert type(everything.make(tmp_path / "x")).__name__ == "InProcess"
