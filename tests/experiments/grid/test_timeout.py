"""A per-run time limit (``--timeout``) ends a hang, in native code too: the worker
process running the run is killed, the run recorded as failed saying so, and the grid
goes on, with ``--jobs 1`` as well (issue: a method whose fit never returned blocked the
grid for good); ``udora run --timeout`` does the same for one run, and ``udora run``
says why it stopped (it printed nothing on Ctrl-C or SIGTERM).

The hanging method is a plugin (a distribution written into a temporary folder) whose
``fit`` ignores SIGINT and SIGTERM and sleeps, as a hung native call would; only SIGKILL
ends it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

PLUGIN = '''
import signal
import time

import numpy as np

from udora.methods.base import MethodConfig, Prediction, UQMethod


class Hang(UQMethod):
    """Hangs in fit, deaf to SIGINT and SIGTERM (a stuck native call)."""

    family = "other"

    class Config(MethodConfig):
        pass

    def fit(self, X, y, *, seed, knowledge=None):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(3600)
        return self

    def predict(self, X):
        n = X.shape[0]
        return Prediction(np.zeros(n), np.ones(n), np.ones(n))


class HangTuned(Hang):
    """Hangs in fit, with a field to tune."""

    class Config(MethodConfig):
        width: int = 1

        SEARCH_SPACE = {"width": {"values": [1, 2]}}


class Sleep(Hang):
    """Sleeps in fit; Ctrl-C and SIGTERM reach it (a long, healthy fit)."""

    def fit(self, X, y, *, seed, knowledge=None):
        time.sleep(3600)
        return self
'''
CLI = "from udora.experiments.cli.main import main; main()"


@pytest.fixture
def hang_plugin(tmp_path):
    root = tmp_path / "site"
    info = root / "udora_hang-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: udora-hang\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[udora.methods]\nhang = udora_hang:Hang\nsleep = udora_hang:Sleep\n"
        "hang_tuned = udora_hang:HangTuned\n"
    )
    (root / "udora_hang.py").write_text(PLUGIN)
    return root


@pytest.mark.slow  # a 20 s limit (a first run builds its task and imports JAX meanwhile)
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_hanging_run_is_killed_at_its_time_limit_and_the_grid_goes_on(
    hang_plugin, tiny_preset, tmp_path, jobs
):
    preset, data = tiny_preset
    out = tmp_path / "res"
    env = {**os.environ, "PYTHONPATH": str(hang_plugin), "UDORA_DATA_DIR": str(data)}
    args = ["bench", "--presets", str(preset), "--methods", "hang,blr", "--seeds", "0"]
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", CLI, *args, "--jobs", jobs, "--timeout", "20", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
    )
    wall = time.perf_counter() - start
    assert proc.returncode == 1, proc.stdout + proc.stderr  # a run failed
    records = {p.parts[-4]: json.loads(p.read_text()) for p in out.glob("*/*/*/seed-*/result.json")}
    assert records["blr"]["status"] == "ok"
    assert records["hang"]["status"] == "failed"
    assert "timed out: still running after 20 s (--timeout), killed" in records["hang"]["error"]
    assert wall < 200  # not the hour the method sleeps


@pytest.mark.slow  # a 20 s limit on one trial (its task built and JAX imported meanwhile)
def test_a_hanging_tuning_trial_is_killed_at_its_time_limit(hang_plugin, tiny_preset, tmp_path):
    """`udora tune --timeout`: a trial whose fit never returns (ngboost_bag's line search
    looped an hour on a diverged fit) is killed and recorded failed, saying so."""
    preset, data = tiny_preset
    out = tmp_path / "tuned"
    env = {**os.environ, "PYTHONPATH": str(hang_plugin), "UDORA_DATA_DIR": str(data)}
    args = ["tune", "--presets", str(preset), "--methods", "hang_tuned", "--trials", "1"]
    proc = subprocess.run(
        [sys.executable, "-c", CLI, *args, "--timeout", "20", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=900,  # the hour the method sleeps fails it; a loaded machine is slow
        env=env,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr  # no trial ok
    (trial,) = out.glob("sweeps/*/trial-0/trial.json")
    record = json.loads(trial.read_text())
    assert record["status"] == "failed"
    assert "timed out: still running after 20 s (--timeout), killed" in record["error"]


def test_a_time_limit_must_be_positive_and_local(tmp_path):
    from udora.experiments.grid.executors import ExecutorSpec
    from udora.experiments.run.checks import UsageError

    with pytest.raises(UsageError, match="--timeout: expected seconds > 0"):
        ExecutorSpec(timeout=0).check()
    with pytest.raises(UsageError, match="--timeout: with the local executor only"):
        ExecutorSpec("ray", None, timeout=5).check()
    assert type(ExecutorSpec(jobs=1, timeout=5).check().make(tmp_path)).__name__ == "LocalPool"


def _udora(env, *args, signal_after=None, signum=signal.SIGINT):
    """``udora *args`` in its own process group; with ``signal_after`` seconds, send
    ``signum`` to the group then (as a terminal's Ctrl-C does). (exit code, output)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", CLI, *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        start_new_session=True,
    )
    if signal_after is not None:
        time.sleep(signal_after)
        os.killpg(proc.pid, signum)
    out, _ = proc.communicate(timeout=240)
    return proc.returncode, out


@pytest.mark.slow  # a 15 s limit, then a few seconds for each signal
def test_udora_run_kills_a_hang_at_its_time_limit_and_says_why_it_stopped(
    hang_plugin, tiny_preset, tmp_path
):
    preset, data = tiny_preset
    out = tmp_path / "res"
    env = {**os.environ, "PYTHONPATH": str(hang_plugin), "UDORA_DATA_DIR": str(data)}
    one = ["run", "--preset", preset, "--out", out]
    code, text = _udora(env, *one, "--method", "hang", "--timeout", "15")
    folder = next(out.glob("tiny/hang/*/seed-0"))
    assert code == 1, text
    assert text.splitlines() == [
        f"failed: {folder}",
        "timed out: still running after 15 s (--timeout), killed",
    ]
    assert json.loads((folder / "result.json").read_text())["status"] == "failed"
    # a signal says the run was not recorded, in the command's process or in its worker
    for method, limit, signum, code_, name in [
        ("sleep", [], signal.SIGINT, 130, "Ctrl-C"),
        ("sleep", [], signal.SIGTERM, 143, "SIGTERM"),
        ("hang", ["--timeout", "600"], signal.SIGINT, 130, "Ctrl-C"),
    ]:
        code, text = _udora(env, *one, "--method", method, *limit, signal_after=12, signum=signum)
        assert code == code_, text
        assert text.strip().startswith(f"interrupted ({name}): "), text
        assert text.strip().endswith("was not recorded") and "Traceback" not in text
    assert not list(out.glob("tiny/sleep/*/seed-0/result.json"))
