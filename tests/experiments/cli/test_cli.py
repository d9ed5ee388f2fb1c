"""The command line from a user's shell: version, preset and method listings, errors."""

import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from udora.experiments.cli.main import app
from udora.oracle.preset import list_presets

runner = CliRunner()


def test_version_matches_distribution():
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"udora {importlib.metadata.version('udora')}"


def test_presets_lists_all_fourteen_and_filters_by_suite():
    assert len(list_presets(kind="regression")) == 14
    assert len(list_presets(kind="classification")) == 14
    assert len(list_presets()) == 28
    for suite in ("dev", "heldout", "cls-dev", "cls-heldout"):
        assert len(list_presets(suite)) == 7, suite
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


@pytest.mark.slow  # seconds each: in the slow set (CI runs it)
def test_compilation_cache_writes_entries(tmp_path):
    code = (
        "from udora.experiments.run.jax_cache import configure_compilation_cache as c; c();"
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


# Runs the CLI's main() with the given arguments in a fresh interpreter, then says whether
# JAX got imported (fast answers: docs/running.md; benchmarks/bench_cli.py times them).
_IMPORTS_JAX = (
    "import sys\n"
    "from udora.experiments.cli.main import main\n"
    "try:\n    main()\nexcept SystemExit:\n    pass\n"
    "print('JAX IMPORTED' if 'jax' in sys.modules else 'NO JAX', file=sys.stderr)\n"
)


def _cli_imports_jax(*args: str, tmp_path: Path) -> tuple[bool, str]:
    env = {**os.environ, "UDORA_JAX_CACHE": str(tmp_path / "cache")}
    proc = subprocess.run(
        [sys.executable, "-c", _IMPORTS_JAX, *args], capture_output=True, text=True, env=env
    )
    last = proc.stderr.strip().splitlines()[-1]
    assert last in ("JAX IMPORTED", "NO JAX"), proc.stderr
    return last == "JAX IMPORTED", proc.stdout + proc.stderr


def test_methods_lists_without_importing_jax(tmp_path):
    imported, out = _cli_imports_jax("methods", tmp_path=tmp_path)
    assert not imported and "nn_ensemble" in out and "built-in" in out
    # the root callback still points JAX's compilation cache at UDORA_JAX_CACHE
    assert (tmp_path / "cache").is_dir()


def test_bad_preset_run_answers_without_importing_jax(tmp_path):
    imported, out = _cli_imports_jax(
        "run", "--preset", "nope", "--method", "blr", tmp_path=tmp_path
    )
    assert "unknown preset" in out or "nope" in out
    assert not imported


def test_console_script_reports_bad_seeds_in_one_line(tmp_path):
    exe = Path(sys.executable).with_name("udora")
    cmd = [
        str(exe),
        "bench",
        "--presets",
        "concrete",
        "--methods",
        "blr",
        "--seeds",
        "a,b",
        "--out",
        str(tmp_path / "out"),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    line = "error: --seeds: expected comma-separated non-negative integers, got 'a'"
    assert proc.stderr.strip() == line and not (tmp_path / "out").exists()


def test_the_readme_command_table_lists_every_command():
    """Each command of `udora --help` has a row in README.md's command table, and each
    row names a command (issue: the table missed some)."""
    import re

    import typer.main

    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    rows = [line for line in readme.splitlines() if line.startswith("| `udora ")]
    listed = {re.match(r"\| `udora ([a-z]+)", row).group(1) for row in rows}
    group = typer.main.get_group(app)
    assert listed == set(group.commands), {
        "missing from README": set(group.commands) - listed,
        "not a command": listed - set(group.commands),
    }
