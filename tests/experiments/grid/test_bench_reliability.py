"""Every planned run ends in a recorded outcome; checks before fitting; Ctrl-C; the lock; modes.

docs/running.md, "A grid": exit 0 all ok, 1 failed or skipped runs, 2 user error, 130 Ctrl-C.
"""

import io
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from processes import ENV, EXE, alive, children, kill_a_worker_in_flight, last_line, wait_for
from rich.console import Console
from typer.testing import CliRunner

from udora.experiments.cli.main import app
from udora.experiments.grid.bench import make_grid, run_grid
from udora.experiments.grid.lock import LOCK_NAME, LockHeldError, results_lock
from udora.experiments.run import execute as run_module
from udora.experiments.run.execute import run_one
from udora.methods import register
from udora.methods.base import MethodConfig, Prediction, UQMethod
from udora.methods.registry import unregister

RESULTS = "*/*/*/seed-*/result.json"
runner = CliRunner()


class _Config(MethodConfig):
    pass


class _Mean(UQMethod):
    """The training mean with unit variances; ``fit`` is replaced per test."""

    Config = _Config

    def fit(self, X, y, *, seed, knowledge=None):
        self.mu_ = float(y.mean())
        return self

    def predict(self, X):
        return Prediction(self.mu_ + 0 * X[:, 0], 1.0 + 0 * X[:, 0], 1.0 + 0 * X[:, 0])


class _SwallowsInterrupt(_Mean):
    """Ctrl-C arrives during fit and is swallowed, as inside a JAX callback."""

    def fit(self, X, y, *, seed, knowledge=None):
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.5)
        except BaseException:
            pass
        return super().fit(X, y, seed=seed)


class _WrapsInterrupt(_Mean):
    """Ctrl-C arrives during fit and comes out as another error."""

    def fit(self, X, y, *, seed, knowledge=None):
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.5)
        except BaseException as err:
            raise RuntimeError("XlaRuntimeError: interrupted") from err
        return super().fit(X, y, seed=seed)


class _MustNotFit(_Mean):
    def fit(self, X, y, *, seed, knowledge=None):
        raise AssertionError("fitted before the output folder was checked")


@pytest.fixture
def test_methods():
    names = {"t_swallow": _SwallowsInterrupt, "t_wrap": _WrapsInterrupt, "t_nofit": _MustNotFit}
    for name, cls in names.items():
        register(name)(cls)
    yield
    for name in names:
        unregister(name)


def _bench(args, **kw):
    result = runner.invoke(app, ["bench", *map(str, args)], **kw)
    return result.exit_code, result.output


# 1. failures recorded, checks before fitting, exit codes


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--seeds", "a,b"], "--seeds: expected comma-separated non-negative integers, got 'a'"),
        (["--seeds", "-1"], "--seeds: expected comma-separated non-negative integers, got '-1'"),
        (["--seeds", "0,,1"], "--seeds: expected comma-separated non-negative integers, got ''"),
        (["--jobs", "0"], "--jobs: expected an integer >= 1, got 0"),
    ],
)
def test_bad_arguments_are_one_line_before_anything_runs(tiny_preset, tmp_path, args, message):
    path, data = tiny_preset
    out = tmp_path / "out"
    code, text = _bench(
        ["--presets", path, "--methods", "blr", "--out", out, "--data-dir", data, *args]
    )
    assert code == 2 and message in text and "Traceback" not in text
    assert not out.exists()


def test_output_that_is_a_file_or_not_creatable_is_refused(tiny_preset, tmp_path):
    path, data = tiny_preset
    a_file = tmp_path / "file"
    a_file.write_text("x")
    for out, message in ((a_file, "is a file, not a folder"), (a_file / "sub", "is not a folder")):
        code, text = _bench(
            ["--presets", path, "--methods", "blr", "--out", out, "--data-dir", data]
        )
        assert code == 2 and "--out: " in text and message in text, text


def test_read_only_output_is_refused(tiny_preset, tmp_path):
    path, data = tiny_preset
    if os.geteuid() == 0:  # root writes through mode bits; sysfs refuses even root
        ro = Path("/sys")
    else:
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o555)
    code, text = _bench(
        ["--presets", path, "--methods", "blr", "--out", ro / "results", "--data-dir", data]
    )
    assert code == 2 and "--out: cannot write" in text


def test_failed_writes_make_bench_exit_1(tiny_preset, tmp_path, monkeypatch):
    """A full disk: the write of each run fails; counted as failed, exit 1."""
    path, data = tiny_preset

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(run_module, "_write", full)
    code, text = _bench(
        [
            "--presets",
            path,
            "--methods",
            "blr",
            "--seeds",
            "0,1",
            "--out",
            tmp_path / "out",
            "--data-dir",
            data,
        ]
    )
    assert code == 1 and "No space left on device" in text
    assert last_line(text).startswith("2 ran, 2 failed, 0 skipped, 0 already done")


def test_missing_data_is_recorded_as_skipped_and_exits_1(tiny_preset, tmp_path):
    path, data = tiny_preset
    lost = yaml.safe_load(path.read_text()) | {"name": "lost", "source": {"file": "lost.csv.gz"}}
    lost_path = tmp_path / "lost.yaml"
    lost_path.write_text(yaml.safe_dump(lost))
    out = tmp_path / "out"
    args = [
        "--presets",
        f"{path},{lost_path}",
        "--methods",
        "blr",
        "--seeds",
        "0,1",
        "--out",
        out,
        "--data-dir",
        data,
    ]
    code, text = _bench(args)
    assert code == 1, text
    assert last_line(text).startswith("2 ran, 0 failed, 2 skipped, 0 already done")
    records = [json.loads(p.read_text()) for p in sorted(out.glob(RESULTS))]
    status = {(r["preset"], r["seed"]): r["status"] for r in records}
    assert status == {
        ("tiny", 0): "ok",
        ("tiny", 1): "ok",
        ("lost", 0): "skipped",
        ("lost", 1): "skipped",
    }
    skipped = [r for r in records if r["status"] == "skipped"]
    assert all("lost.csv.gz" in r["reason"] and r["error"] == r["reason"] for r in skipped)
    code, text = _bench(args)  # the rerun retries only what could not run
    assert code == 1
    assert last_line(text).startswith("0 ran, 0 failed, 2 skipped, 2 already done")


# 2. udora run checks its output before fitting


def test_run_refuses_a_file_as_output_before_fitting(tiny_preset, tmp_path, test_methods):
    path, data = tiny_preset
    a_file = tmp_path / "file"
    a_file.write_text("x")
    args = ["run", "--preset", str(path), "--method", "t_nofit", "--data-dir", str(data)]
    for out in (a_file, a_file / "sub"):
        result = runner.invoke(app, [*args, "--out", str(out)])
        assert result.exit_code == 2, result.output
        assert "--out: " in result.output and "fitted before" not in result.output
    result = runner.invoke(app, [*args, "--out", str(tmp_path / "o"), "--seed", "-1"])
    assert result.exit_code == 2 and "--seed: expected a non-negative integer" in result.output


# 3. interrupts: in process (a swallowed Ctrl-C still stops the grid)


@pytest.mark.parametrize("method", ["t_swallow", "t_wrap"])
def test_a_swallowed_interrupt_still_stops_the_grid(tiny_preset, tmp_path, test_methods, method):
    path, data = tiny_preset
    runs = make_grid([str(path)], [method], [0, 1, 2], data_dir=data)
    before = signal.getsignal(signal.SIGINT)  # SIG_IGN in a shell's background job
    summary = run_grid(runs, tmp_path, data_dir=data, console=Console(file=io.StringIO()))
    assert summary.interrupted
    records = [json.loads(p.read_text()) for p in tmp_path.glob(RESULTS)]
    if method == "t_swallow":  # the run itself finished and is kept; the next never started
        assert summary.done == 1 and [r["status"] for r in records] == ["ok"]
    else:  # the wrapped interrupt is not recorded as a failure of the method
        assert summary.done == 0 and records == []
    assert signal.getsignal(signal.SIGINT) is before  # the grid puts back what it found


# 3. interrupts: a real `udora bench`, real SIGINT


def _grid_cmd(path, data, out, jobs, seeds=40, *extra):
    return [
        EXE,
        "bench",
        "--presets",
        str(path),
        "--methods",
        "blr,gp_oracle",
        "--seeds",
        ",".join(map(str, range(seeds))),
        "--out",
        str(out),
        "--data-dir",
        str(data),
        "--jobs",
        str(jobs),
        *extra,
    ]


def _interrupt(proc, out, jobs, when):
    """Send SIGINT at ``when``; returns (seconds from the first SIGINT to exit, children).
    ``"group"``: as ``"first"``, to the whole process group as a terminal's Ctrl-C does
    (the workers get it too, some while they are still starting)."""
    lock = out / LOCK_NAME
    assert wait_for(lambda: lock.exists() and lock.stat().st_size > 0), "the grid never started"
    if jobs > 1:  # the pool's workers (and the resource tracker) are up
        assert wait_for(lambda: len(children(proc.pid)) > jobs)
    if when not in ("first", "group"):
        assert wait_for(lambda: len(list(out.glob(RESULTS))) >= 3)
    kids = children(proc.pid)
    t0 = time.monotonic()
    if when == "group":
        os.killpg(proc.pid, signal.SIGINT)
    else:
        proc.send_signal(signal.SIGINT)
    if when == "double":
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
    proc.wait(timeout=30)
    return time.monotonic() - t0, kids


@pytest.mark.parametrize(
    ("jobs", "when"),
    [
        (2, "group"),
        pytest.param(2, "first", marks=pytest.mark.slow),
        pytest.param(1, "group", marks=pytest.mark.slow),
        pytest.param(1, "mid", marks=pytest.mark.slow),
        pytest.param(2, "double", marks=pytest.mark.slow),
        pytest.param(1, "first", marks=pytest.mark.slow),
        pytest.param(1, "double", marks=pytest.mark.slow),
        pytest.param(2, "mid", marks=pytest.mark.slow),
    ],
)
def test_ctrl_c_stops_the_grid_at_once_and_keeps_finished_runs(tiny_preset, tmp_path, jobs, when):
    path, data = tiny_preset
    out = tmp_path / "grid"
    proc = subprocess.Popen(
        _grid_cmd(path, data, out, jobs),
        env=ENV,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group, for "group"
    )
    took, kids = _interrupt(proc, out, jobs, when)
    text = proc.stdout.read()
    print(f"jobs {jobs}, {when}: exit {proc.returncode} {took:.2f} s after SIGINT")
    assert proc.returncode == 130, text
    assert took < 15, f"{took:.1f} s from SIGINT to exit"
    assert "interrupted" in text and "Traceback" not in text
    assert wait_for(lambda: not alive(kids), 5), f"left running: {alive(kids)}"
    finished = list(out.glob(RESULTS))
    assert len(finished) < 80
    assert all(json.loads(p.read_text())["status"] == "ok" for p in finished)
    assert last_line(text).startswith(f"interrupted: {len(finished)} ran, 0 failed")


@pytest.mark.slow  # ~20 s of two subprocess benches; the default run keeps under 5 minutes
def test_lock_refuses_a_second_bench_and_wait_lock_resumes(tiny_preset, tmp_path):
    """Two real processes: the second refuses naming the first; --wait-lock then resumes."""
    path, data = tiny_preset
    out = tmp_path / "grid"
    first = subprocess.Popen(
        _grid_cmd(path, data, out, 1),
        env=ENV,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    lock = out / LOCK_NAME
    assert wait_for(lambda: lock.exists() and lock.stat().st_size > 0)
    wait_cmd = _grid_cmd(path, data, out, 1, 40, "--wait-lock")
    waiter = subprocess.Popen(
        wait_cmd, env=ENV, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    second = subprocess.run(
        _grid_cmd(path, data, out, 1), env=ENV, text=True, capture_output=True, timeout=60
    )
    assert second.returncode == 2, second.stdout + second.stderr
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1 and f"pid {first.pid}" in lines[0] and "bench" in lines[0], lines
    assert "since" in lines[0] and "--wait-lock" in lines[0]
    time.sleep(0.5)
    first.send_signal(signal.SIGINT)
    first.wait(timeout=30)
    assert first.returncode == 130
    kept = len(list(out.glob(RESULTS)))
    waiter.wait(timeout=120)
    text = waiter.stdout.read()
    assert waiter.returncode == 0, text
    assert last_line(text).startswith(f"{80 - kept} ran, 0 failed, 0 skipped, {kept} already")
    results = list(out.glob(RESULTS))
    assert len(results) == 80 and not list(out.glob("*/*/*/.seed-*"))
    assert lock.read_text() == ""  # released: names nobody


def test_lock_in_process(tmp_path):
    with results_lock(tmp_path) as info:
        assert json.loads((tmp_path / LOCK_NAME).read_text())["pid"] == os.getpid() == info["pid"]
        with pytest.raises(LockHeldError, match=f"pid {os.getpid()}"), results_lock(tmp_path):
            pass
    with results_lock(tmp_path):  # released on exit
        pass


# 5. results readable by the group


@pytest.mark.parametrize("umask", [0o022, 0o002])
def test_run_folders_respect_the_umask(tiny_preset, tmp_path, umask):
    path, data = tiny_preset
    old = os.umask(umask)
    try:
        res = run_one(path, "blr", 0, {}, tmp_path / "out", data_dir=data)
    finally:
        os.umask(old)
    assert res.status == "ok"
    for folder in (res.path, res.path.parent, res.path.parents[2]):
        assert folder.stat().st_mode & 0o777 == 0o777 & ~umask, folder
    for name in ("result.json", "predictions.npz"):
        assert (res.path / name).stat().st_mode & 0o777 == 0o666 & ~umask, name


@pytest.mark.slow  # 3-14 s: the default set's budget
def test_set_scoped_to_one_method_of_a_grid(tiny_preset, tmp_path):
    path, data = tiny_preset
    common = ["bench", "--presets", str(path), "--data-dir", str(data), "--out", str(tmp_path)]
    ok = runner.invoke(app, [*common, "--methods", "blr,gp_oracle", "--set", "blr.alpha=0.5"])
    assert ok.exit_code == 0, ok.output
    records = {r["method"]: r for r in (json.loads(p.read_text()) for p in tmp_path.glob(RESULTS))}
    assert records["blr"]["config"]["alpha"] == 0.5 and records["blr"]["overrides"] == {
        "alpha": 0.5
    }
    assert records["gp_oracle"]["overrides"] == {}
    absent = runner.invoke(app, [*common, "--methods", "blr", "--set", "gp_linear.mean=zero"])
    assert absent.exit_code == 2
    assert "gp_linear.mean: gp_linear is not among the grid's methods (blr)" in absent.output
    # a config error is a ValueError, which the console script prints as one line, exit 2
    unscoped = runner.invoke(app, [*common, "--methods", "blr,gp_oracle", "--set", "alpha=0.5"])
    assert isinstance(unscoped.exception, ValueError)
    message = str(unscoped.exception)
    assert "unknown field(s) ['alpha']" in message
    assert "alpha is a field of blr only: use --set blr.alpha=..." in message


def test_an_interrupt_no_one_can_raise_prints_no_traceback(monkeypatch):
    """Ctrl-C landing in a destructor or JAX's GC callback: recorded, not printed."""
    import gc
    import sys

    from udora.experiments.run import interrupts

    class RaisesOnDelete:
        def __del__(self):
            raise KeyboardInterrupt

    seen = []

    def recorder(unraisable):
        seen.append(type(unraisable.exc_value))

    monkeypatch.setattr(sys, "unraisablehook", recorder)
    with interrupts.catch_interrupts():
        RaisesOnDelete()
        gc.collect()
        assert seen == [KeyboardInterrupt]  # no Ctrl-C yet: passed on as usual
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)  # the handler raises as soon as the signal is delivered
        assert interrupts.requested()
        RaisesOnDelete()
        gc.collect()
        assert seen == [KeyboardInterrupt]  # after Ctrl-C: dropped, the flag has it
    assert sys.unraisablehook is recorder


@pytest.mark.slow
def test_workers_end_when_the_grid_process_is_killed(tiny_preset, tmp_path):
    """SIGKILL gives the parent no chance to stop its pool; the workers notice and exit."""
    path, data = tiny_preset
    out = tmp_path / "grid"
    proc = subprocess.Popen(
        _grid_cmd(path, data, out, 2),
        env=ENV,
        text=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    assert wait_for(lambda: len(children(proc.pid)) > 2), "the pool never started"
    assert wait_for(lambda: len(list(out.glob(RESULTS))) >= 1)
    kids = children(proc.pid)
    proc.kill()
    proc.wait(timeout=10)
    assert wait_for(lambda: not alive(kids), 10), f"left running: {alive(kids)}"


@pytest.mark.slow
def test_a_worker_killed_mid_run_fails_that_run_and_the_grid_goes_on(tiny_preset, tmp_path):
    """kill -9 of the worker running one run: that run is recorded failed with the signal,
    the run beside it (its worker terminated by the broken pool) runs again, the rest run."""
    path, data = tiny_preset
    out = tmp_path / "grid"
    cmd = [
        EXE,
        "bench",
        "--presets",
        str(path),
        "--methods",
        "nn_ensemble",
        "--quick",
        "--seeds",
        "0,1,2,3,4,5",
        "--out",
        str(out),
        "--data-dir",
        str(data),
        "--jobs",
        "2",
    ]
    proc = subprocess.Popen(
        cmd, env=ENV, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    kill_a_worker_in_flight(out)  # a quick nn_ensemble fit takes seconds
    text, _ = proc.communicate(timeout=300)
    assert proc.returncode == 1, text
    assert "Traceback" not in text and "BrokenProcessPool" not in text
    records = [json.loads(p.read_text()) for p in out.glob(RESULTS)]
    assert len(records) == 6
    failed = [r for r in records if r["status"] != "ok"]
    assert len(failed) == 1, [r["error"] for r in failed]
    reason = "the worker process running it died of SIGKILL (killed: out of memory, or kill -9)"
    assert failed[0]["error"] == reason
    said = f"seed {failed[0]['seed']}: the worker process running it died of SIGKILL"
    assert said in " ".join(text.split())  # rich wraps the line
    assert last_line(text).startswith("6 ran, 1 failed")
    assert not list(out.glob(".inflight-*"))
    rerun = subprocess.run(cmd, env=ENV, text=True, capture_output=True, timeout=300)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert last_line(rerun.stdout).startswith("1 ran, 0 failed, 0 skipped, 5 already done")


def test_a_grid_logged_to_a_file_says_how_far_it_is(tiny_preset, tmp_path, monkeypatch):
    """Not a terminal (CI, SLURM): a progress line every LOG_EVERY seconds and at the end
    (rich's bar draws nothing there until the grid ends)."""
    import io

    from rich.console import Console

    from udora.experiments.grid import bench, progress

    path, data = tiny_preset
    monkeypatch.setattr(progress, "LOG_EVERY", 0.0)  # every run's end, here
    log = io.StringIO()
    console = Console(file=log, force_terminal=False, width=120)
    runs = bench.make_grid([str(path)], ["blr"], [0, 1, 2], data_dir=data)
    assert bench.run_grid(runs, tmp_path / "res", data_dir=data, console=console).ok
    lines = [line for line in log.getvalue().splitlines() if "runs done" in line]
    assert [line.split("] ")[1] for line in lines] == [
        f"{k}/3 runs done (0 failed)" for k in (1, 2, 3)
    ]
