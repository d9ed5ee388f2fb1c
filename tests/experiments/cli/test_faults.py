"""Faults of the environment are one clear line, never a traceback: an unusable JAX cache,
a damaged or misplaced tuned file, a report folder that cannot be written, a full disk."""

import errno
import subprocess
from fnmatch import fnmatch

import numpy as np
import pytest
import yaml
from processes import ENV, EXE
from typer.testing import CliRunner

from udora.experiments.cli.main import app
from udora.experiments.run.records import read_run

runner = CliRunner()


def _udora(*args, env=None):
    return subprocess.run(
        [EXE, *map(str, args)],
        env={**ENV, **(env or {})},
        text=True,
        capture_output=True,
        timeout=300,
    )


def _cache_warning(cache, why):
    return (
        f"warning: JAX compilation cache {cache} {why}; running without the cache (set "
        "UDORA_JAX_CACHE to a writable folder, or off)"
    )


CACHES = [("afile", "is a file, not a folder"), ("afile/sub", "is not usable (Not a directory)")]


@pytest.mark.slow  # seconds each: in the slow set (CI runs it)
@pytest.mark.parametrize(("where", "why"), CACHES)
def test_an_unusable_jax_cache_is_one_warning_and_the_command_runs(tmp_path, where, why):
    (tmp_path / "afile").write_text("")
    cache = tmp_path / where
    done = _udora("methods", env={"UDORA_JAX_CACHE": str(cache)})
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines == [_cache_warning(cache, why)]
    assert "nn_ensemble" in done.stdout


@pytest.mark.slow  # a grid in a subprocess
def test_a_grid_with_an_unusable_jax_cache_warns_once_and_is_ok(tiny_preset, tmp_path):
    path, data = tiny_preset
    (tmp_path / "afile").write_text("")
    done = _udora(
        "bench",
        "--presets",
        path,
        "--methods",
        "blr",
        "--seeds",
        "0,1",
        "--jobs",
        "2",
        "--out",
        tmp_path / "out",
        "--data-dir",
        data,
        env={"UDORA_JAX_CACHE": str(tmp_path / "afile")},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("warning")]
    assert lines == [_cache_warning(tmp_path / "afile", "is a file, not a folder")]


def _tuned(tmp_path, text):
    folder = tmp_path / "tuned"
    (folder / "tiny").mkdir(parents=True)
    (folder / "tiny" / "blr.yaml").write_text(text)
    return folder


@pytest.mark.slow  # seconds each: in the slow set (CI runs it)
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("config: [alpha\n", "is not valid YAML (line 2): *; rerun `udora tune` for it"),
        ("\n", "is empty; rerun `udora tune` for it, or remove it"),
        (
            yaml.safe_dump({"preset": "tiny", "method": "gp_linear", "config": {}}),
            "a tuned file of method 'gp_linear', found where the one of 'blr' belongs",
        ),
        (
            yaml.safe_dump({"preset": "other", "method": "blr", "config": {}}),
            "a tuned file of preset 'other', found where the one of 'tiny' belongs",
        ),
    ],
)
def test_a_damaged_or_misplaced_tuned_file_is_one_line(tiny_preset, tmp_path, text, message):
    path, data = tiny_preset
    tuned = _tuned(tmp_path, text)
    done = _udora(
        "bench",
        "--presets",
        path,
        "--methods",
        "blr",
        "--out",
        tmp_path / "out",
        "--data-dir",
        data,
        "--tuned",
        tuned,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert fnmatch(done.stderr.strip(), f"error: {tuned / 'tiny' / 'blr.yaml'}: {message}")
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").rglob("result.json"))


@pytest.fixture
def one_run(tiny_preset, tmp_path):
    path, data = tiny_preset
    out = tmp_path / "out"
    result = runner.invoke(
        app,
        [
            "run",
            "--preset",
            str(path),
            "--method",
            "blr",
            "--out",
            str(out),
            "--data-dir",
            str(data),
        ],
    )
    assert result.exit_code == 0, result.output
    return out


def test_report_into_a_folder_that_cannot_be_made_is_one_line(one_run, tmp_path):
    (tmp_path / "afile").write_text("")
    result = runner.invoke(app, ["report", str(one_run), "--out", str(tmp_path / "afile" / "r")])
    assert result.exit_code == 2, result.output
    assert result.output.strip() == f"error: {tmp_path / 'afile' / 'r'}: Not a directory"


def test_report_on_a_full_disk_is_one_line_and_exit_1(one_run, monkeypatch):
    import pandas as pd

    def full(self, fh, *args, **kwargs):  # a write to the open file names no file
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_parquet", full)
    result = runner.invoke(app, ["report", str(one_run)])
    assert result.exit_code == 1, result.output
    parquet = one_run / "report" / "results.parquet"
    assert result.output.strip() == f"error: {parquet}: No space left on device"


def test_a_rerun_on_a_full_disk_fails_the_run_and_keeps_the_finished_ones(
    tiny_preset, one_run, monkeypatch
):
    path, data = tiny_preset
    finished = next(p.parent for p in one_run.rglob("result.json"))

    def full(file, **arrays):
        raise OSError(errno.ENOSPC, "No space left on device", str(file))

    monkeypatch.setattr(np, "savez", full)
    result = runner.invoke(
        app,
        [
            "bench",
            "--presets",
            str(path),
            "--methods",
            "blr",
            "--seeds",
            "0,1",
            "--out",
            str(one_run),
            "--data-dir",
            str(data),
        ],
    )
    assert result.exit_code == 1, result.output
    assert "No space left on device" in result.output and "Traceback" not in result.output
    assert "1 ran, 1 failed, 0 skipped, 1 already done" in result.output
    assert read_run(finished).finished  # the run finished before is whole
    assert not list(one_run.rglob(".seed-*.tmp"))


def test_a_tune_on_a_full_disk_stops_naming_the_file(tiny_preset, tmp_path, monkeypatch, capsys):
    """A trial's oracle analysis stores the fit part's posterior in the sweep folder; a
    full disk there is the machine's fault, not the analysis's: the tune stops with one
    line naming the file (exit 1) instead of finishing with every trial's oracle missing."""
    import sys

    from udora.experiments.cli.main import main
    from udora.experiments.tasks import arrays

    path, data = tiny_preset

    def full(file, blob):  # the atomic writer names the file it was publishing
        raise OSError(errno.ENOSPC, "No space left on device", str(file))

    monkeypatch.setattr(arrays, "write_bytes", full)
    out = tmp_path / "tuned"
    argv = ["tune", "--presets", path, "--methods", "blr", "--trials", "2", "--out", out]
    monkeypatch.setattr(sys, "argv", ["udora", *map(str, [*argv, "--data-dir", data])])
    with pytest.raises(SystemExit) as exit_:
        main()
    err = capsys.readouterr().err
    (posterior,) = [line for line in err.splitlines() if line.startswith("error:")]
    assert exit_.value.code == 1, err
    assert posterior.endswith(": No space left on device") and "-fit-" in posterior
    assert str(out / "sweeps") in posterior and "Traceback" not in err
    assert not (out / "tiny" / "blr.yaml").exists()  # no tuned file from trials without oracle
