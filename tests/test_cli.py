"""The command line from a user's shell: version, preset and method listings, errors."""

import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from udora.experiments.cli import app
from udora.oracle.preset import list_presets

runner = CliRunner()


def test_version_matches_distribution():
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"udora {importlib.metadata.version('udora')}"


def test_presets_lists_all_fourteen_and_filters_by_suite():
    names = list_presets()
    assert len(names) == 14
    assert len(list_presets("dev")) == 7 and len(list_presets("heldout")) == 7
    result = runner.invoke(app, ["presets", "--suite", "heldout"])
    assert result.exit_code == 0
    assert "white_wine" in result.stdout and "abalone" not in result.stdout


def test_each_command_has_help():
    for args in (["--help"], ["presets", "--help"], ["methods", "--help"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, args
        assert "Usage" in result.stdout


def test_console_script_reports_bad_suite_in_one_line():
    exe = Path(sys.executable).with_name("udora")
    proc = subprocess.run([str(exe), "presets", "--suite", "nope"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "unknown suite 'nope'" in proc.stderr and "Traceback" not in proc.stderr


def test_compilation_cache_writes_entries(tmp_path):
    code = (
        "from udora.experiments.jax_cache import configure_compilation_cache as c; c();"
        "import jax, jax.numpy as jnp;"
        # this tiny program compiles faster than the 0.1 s threshold
        "jax.config.update('jax_persistent_cache_min_compile_time_secs', 0.0);"
        "f = jax.jit(lambda x: jnp.linalg.cholesky(x @ x.T + 3 * jnp.eye(64)).sum());"
        "print(f(jnp.ones((64, 64))))"
    )
    env = {**os.environ, "UDORA_JAX_CACHE": str(tmp_path / "cache")}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, capture_output=True)
    assert any((tmp_path / "cache").iterdir()), "no compiled program was written to the cache"
    env["UDORA_JAX_CACHE"] = "off"
    off = tmp_path / "off"
    subprocess.run([sys.executable, "-c", code], check=True, env=env, capture_output=True)
    assert not off.exists()


def test_console_script_reports_bad_seeds_in_one_line(tmp_path):
    exe = Path(sys.executable).with_name("udora")
    cmd = [str(exe), "bench", "--presets", "concrete", "--methods", "blr", "--seeds", "a,b",
           "--out", str(tmp_path / "out")]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    line = "error: --seeds: expected comma-separated non-negative integers, got 'a'"
    assert proc.stderr.strip() == line and not (tmp_path / "out").exists()
