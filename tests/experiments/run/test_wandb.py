"""W&B logging: offline without credentials, into one folder that the command names with
the `wandb sync` command that uploads it (bench and sweep run alike), and never fatal.

An offline run's transaction log (``offline-run-*/run-*.wandb``) is written by W&B's
service process, which closes it some time after ``run.finish()`` returns (``finish``
only tells the service, without waiting); under load a test reading it at once could see
a part of it. :func:`_offline_runs` waits for the service itself (``wandb.teardown()``
returns when it has exited, every run's log closed) before reading.
"""

import json
from pathlib import Path

import pytest

from udora.experiments.run.execute import run_one
from udora.experiments.run.wandb_log import log_run, wandb_mode


def _offline_runs(root):
    """The offline runs W&B wrote under ``root``, read after its service has exited."""
    import wandb

    wandb.teardown()  # waits for the service process: every run's log is complete on disk
    return list((root / "wandb").glob("offline-run-*"))


@pytest.fixture(params=["prompt", "slow"])
def service(request, monkeypatch):
    """``slow``: the service hears of a finished run only at teardown, as a busy machine
    may delay it (``run.finish()`` tells it without waiting), so the run's log is not yet
    complete when ``finish`` returns."""
    if request.param == "slow":
        from wandb.sdk.lib.service.service_connection import ServiceConnection

        monkeypatch.setattr(ServiceConnection, "inform_finish", lambda self, run_id: None)
    return request.param


@pytest.fixture
def no_credentials(monkeypatch, tmp_path):
    for var in ("WANDB_MODE", "WANDB_API_KEY", "WANDB_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no ~/.netrc
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    monkeypatch.setenv("WANDB_DIR", str(tmp_path / "wandb"))
    monkeypatch.setenv("WANDB_SILENT", "true")


def test_offline_run_is_written_without_network(tiny_preset, tmp_path, no_credentials):
    path, data = tiny_preset
    res = run_one(path, "blr", 0, {}, tmp_path / "out", data_dir=data)
    assert wandb_mode() == "offline"
    assert log_run(res.path) is True
    runs = _offline_runs(tmp_path / "wandb")  # WANDB_DIR, not the run folder
    assert len(runs) == 1 and any(runs[0].rglob("*.wandb"))
    assert not (res.path / "wandb").exists()


def test_logging_problems_never_fail(tmp_path, no_credentials):
    (tmp_path / "result.json").write_text(json.dumps({"preset": "x"}))  # incomplete record
    with pytest.warns(UserWarning, match="W&B logging .* skipped"):
        assert log_run(tmp_path) is False


def test_grid_logs_the_resolved_run(tiny_preset, tmp_path, no_credentials, service):
    import io
    import warnings

    from rich.console import Console

    from udora.experiments.grid.bench import make_grid, run_grid

    path, data = tiny_preset
    (run,) = make_grid([str(path)], ["blr"], [2], {"alpha": 3.0}, data_dir=data)
    out = tmp_path / "out"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_grid([run], out, data_dir=data, wandb=True, console=Console(file=io.StringIO()))
    assert not [w.message for w in caught if "W&B logging" in str(w.message)]
    (logged,) = _offline_runs(tmp_path / "wandb")
    stored = b"".join(f.read_bytes() for f in logged.rglob("*.wandb"))  # offline run record
    assert run.config_hash.encode() in stored and b"alpha=3.0" in stored


def _sync_line(output: str) -> str:
    """The one line naming where the offline runs went."""
    lines = [ln for ln in output.splitlines() if ln.startswith("W&B offline")]
    assert len(lines) == 1, output
    return lines[0]


def _udora(*args: str):
    from typer.testing import CliRunner

    from udora.experiments.cli.main import app

    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def _bench(path, data, out, *extra: str) -> str:
    """``udora bench --wandb`` of blr on the tiny preset; its output."""
    return _udora(
        "bench",
        "--presets",
        str(path),
        "--methods",
        "blr",
        "--data-dir",
        str(data),
        "--out",
        str(out),
        "--wandb",
        *extra,
    )


@pytest.mark.slow  # 3-14 s: the default set's budget
def test_bench_and_sweep_run_name_the_offline_folder_and_the_sync_command(
    tiny_preset, tmp_path, monkeypatch, no_credentials
):
    """WANDB_MODE=offline: `bench --wandb` and `sweep run --wandb` each end with one line
    naming the folder their runs went to (WANDB_DIR's wandb/) and the exact `wandb sync`
    command; run by a shell as printed (with --dry-run), W&B's CLI lists exactly them."""
    import os
    import shlex
    import subprocess
    import sys

    from udora.experiments.tuning import sweep_file

    monkeypatch.setenv("WANDB_MODE", "offline")
    path, data = tiny_preset
    folder = (tmp_path / "wandb" / "wandb").resolve()
    bench = _bench(path, data, tmp_path / "res", "--seeds", "0,1")
    command = f"wandb sync {shlex.quote(str(folder))}/offline-run-*"
    expected = f"W&B offline: 2 runs logged to {folder}; upload them later with: {command}"
    assert _sync_line(bench) == expected and bench.rstrip().endswith(expected)
    assert len(_offline_runs(folder.parent)) == 2

    config = sweep_file.sweep_config(str(path), "blr", search="random", trials=3)
    file = sweep_file.write_sweep_config(config, tmp_path / "blr.yaml")
    sweep = _udora(
        "sweep",
        "run",
        str(file),
        "--out",
        str(tmp_path / "sweeps"),
        "--wandb",
        "--data-dir",
        str(data),
    )
    assert "3 trials (3 ok" in sweep  # run here, as without --wandb
    expected = f"W&B offline: 3 runs logged to {folder}; upload them later with: {command}"
    assert _sync_line(sweep) == expected and sweep.rstrip().endswith(expected)
    assert len(_offline_runs(folder.parent)) == 5

    wandb_cli = shlex.quote(str(Path(sys.executable).parent / "wandb"))
    dry = subprocess.run(
        ["bash", "-c", command.replace("wandb sync", f"{wandb_cli} sync --dry-run", 1)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "WANDB_SILENT": "false"},
    )
    said = dry.stdout + dry.stderr
    assert "Would sync 5 run(s)" in said, said


def test_without_wandb_dir_a_grid_logs_into_its_results_folder(
    tiny_preset, tmp_path, monkeypatch, no_credentials
):
    monkeypatch.delenv("WANDB_DIR")
    path, data = tiny_preset
    out = tmp_path / "res"
    line = _sync_line(_bench(path, data, out))
    assert line.startswith(f"W&B offline: 1 run logged to {(out / 'wandb').resolve()}; ")
    assert len(_offline_runs(out)) == 1


def test_disabled_logs_nothing_and_says_so(tiny_preset, tmp_path, monkeypatch, no_credentials):
    monkeypatch.setenv("WANDB_MODE", "disabled")
    path, data = tiny_preset
    said = _bench(path, data, tmp_path / "res")
    assert said.rstrip().endswith("W&B is disabled (WANDB_MODE=disabled): nothing was logged")
    assert not list(tmp_path.rglob("offline-run-*"))
