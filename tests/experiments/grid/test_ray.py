"""`--executor ray` on a real local Ray (started by the command, one CPU per run): the same
result files as the local executor, resume, and a Ray worker killed mid-run.

Slow: each command starts Ray (about 6 s) and its workers import JAX.
"""

import json
import os
import signal
import subprocess

import numpy as np
import psutil
import pytest
from processes import ENV, EXE, last_line, wait_for

pytestmark = pytest.mark.slow
RESULTS = "*/*/*/seed-*/result.json"


def _bench(path, data, out, methods, seeds, *extra):
    return [
        EXE,
        "bench",
        "--presets",
        str(path),
        "--methods",
        methods,
        "--seeds",
        seeds,
        "--out",
        str(out),
        "--data-dir",
        str(data),
        *extra,
    ]


def _metrics(out):
    found = {}
    for p in out.glob(RESULTS):
        record = json.loads(p.read_text())
        assert record["status"] == "ok", record["error"]
        found[str(p.relative_to(out))] = record["metrics"]
    return found


def test_ray_gives_the_local_results_and_resumes(tiny_preset, tmp_path):
    path, data = tiny_preset
    local = subprocess.run(
        _bench(path, data, tmp_path / "local", "blr,gp_oracle", "0,1"),
        env=ENV,
        text=True,
        capture_output=True,
        timeout=600,
    )
    assert local.returncode == 0, local.stdout + local.stderr
    ray_cmd = _bench(path, data, tmp_path / "ray", "blr,gp_oracle", "0,1", "--executor", "ray")
    on_ray = subprocess.run(ray_cmd, env=ENV, text=True, capture_output=True, timeout=600)
    assert on_ray.returncode == 0, on_ray.stdout + on_ray.stderr
    assert last_line(on_ray.stdout).startswith("4 ran, 0 failed, 0 skipped, 0 already done")
    a, b = _metrics(tmp_path / "local"), _metrics(tmp_path / "ray")
    assert sorted(a) == sorted(b) and len(a) == 4
    for key in a:
        assert a[key].keys() == b[key].keys()
        x = np.array([np.nan if v is None else v for v in a[key].values()], dtype=float)
        y = np.array([np.nan if v is None else v for v in b[key].values()], dtype=float)
        assert np.allclose(x, y, rtol=1e-9, atol=1e-12, equal_nan=True), key
    again = subprocess.run(ray_cmd, env=ENV, text=True, capture_output=True, timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr
    assert last_line(again.stdout).startswith("0 ran, 0 failed, 0 skipped, 4 already done")


def _ray_task_workers():
    """Ray worker processes running one of our tasks (their title names the function)."""
    out = []
    for proc in psutil.process_iter(["cmdline"]):
        cmd = " ".join(proc.info["cmdline"] or [])
        if cmd.startswith("ray::_ray_call"):
            out.append(proc)
    return out


def test_a_killed_ray_worker_fails_its_run_and_the_grid_goes_on(tiny_preset, tmp_path):
    path, data = tiny_preset
    out = tmp_path / "grid"
    cmd = _bench(path, data, out, "nn_ensemble", "0,1,2,3", "--quick", "--executor", "ray")
    proc = subprocess.Popen(
        cmd, env=ENV, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    assert wait_for(lambda: _ray_task_workers(), 240), "no Ray task ever ran"
    os.kill(_ray_task_workers()[0].pid, signal.SIGKILL)
    text, _ = proc.communicate(timeout=600)
    assert proc.returncode == 1, text
    records = [json.loads(p.read_text()) for p in out.glob(RESULTS)]
    failed = [r for r in records if r["status"] != "ok"]
    assert len(records) == 4 and len(failed) == 1, [r["error"] for r in records]
    assert failed[0]["error"] == "the Ray worker running it died (WorkerCrashedError)"
    assert last_line(text).startswith("4 ran, 1 failed")
