"""Every command with a bad value of every option: a user error (one line, exit 2) or a
clean run, never a traceback.

The commands and their options are read from the command line itself, so a new command
or option is covered without editing this test. Each gets a small valid invocation on a
tiny preset; then each of its options (and positional arguments) in turn takes each bad
value. An exception that reaches the command line must be one that ``udora``'s entry point
prints as one line (ValueError, KeyError, OSError and their kind); anything else would be a
traceback.
"""

import json

import click
import pytest
import typer
from tiny_presets import one_tiny_preset
from typer.testing import CliRunner

from udora.experiments.cli.main import app

BAD = ("", "-1", "nope", "no/such/folder", "1e999")  # relative: the test runs in a tmp folder
ONE_LINE = (ValueError, KeyError, OSError)  # what udora.experiments.cli.main.main prints
runner = CliRunner()


def _commands():
    """{"sweep run": click command, ...} of every leaf command, and of every group that
    takes options of its own (``presets --suite``)."""
    out = {}

    def walk(command, path):
        subs = getattr(command, "commands", None)
        if subs:
            if path and any(p.name != "help" for p in command.params):
                out[" ".join(path)] = command
            for name, sub in subs.items():
                walk(sub, (*path, name))
        else:
            out[" ".join(path)] = command

    walk(typer.main.get_command(app), ())
    return out


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A tiny preset, its data, a results folder with one run and a sweep file."""
    root = tmp_path_factory.mktemp("cli")
    one_tiny_preset(root, rows=60, n_train=30)
    common = ["--data-dir", str(root / "data")]
    ran = runner.invoke(
        app,
        [
            "run",
            "--preset",
            str(root / "tiny.yaml"),
            "--method",
            "blr",
            "--out",
            str(root / "results"),
            *common,
        ],
    )
    assert ran.exit_code == 0, ran.output
    init = runner.invoke(
        app,
        [
            "sweep",
            "init",
            "--preset",
            str(root / "tiny.yaml"),
            "--method",
            "blr",
            "--out",
            str(root / "sweep.yaml"),
            "--trials",
            "1",
        ],
    )
    assert init.exit_code == 0, init.output
    built = runner.invoke(
        app, ["release", "build", str(root / "results"), "--out", str(root / "release")]
    )
    assert built.exit_code == 0, built.output
    return root


def _base(world):
    """A small valid invocation of every command (positional arguments first)."""
    p, out, data = str(world / "tiny.yaml"), str(world / "out"), str(world / "data")
    d = ["--data-dir", data]
    return {
        "run": ["--preset", p, "--method", "blr", "--out", out, *d],
        "bench": ["--presets", p, "--methods", "blr", "--out", out, *d],
        "report": [str(world / "results"), "--out", out],
        "methods": ["blr"],
        "presets": [],
        "presets show": ["concrete"],
        "presets fit": [p, "--subset", "30", *d],
        "oracle build": ["--preset", p, "--out", out, *d],
        "oracle show": [str(world / "out")],
        "sweep init": ["--preset", p, "--method", "blr", "--out", str(world / "s.yaml")],
        "sweep trial": [f"preset={p}", "method=blr", "seed=0", *d],
        "sweep run": [str(world / "sweep.yaml"), "--out", out, *d],
        "tune": ["--presets", p, "--methods", "blr", "--trials", "1", "--out", out, *d],
        "ablate": ["--factor", "alpha=1,2", "--presets", p, "--methods", "blr", "--out", out, *d],
        "acquire": [
            "--presets",
            p,
            "--methods",
            "blr",
            "--rounds",
            "1",
            "--batch",
            "3",
            "--out",
            out,
            *d,
        ],
        "diagnose": ["--preset", p, "--method", "blr", "--draws", "2", "--out", out, *d],
        "meta": [str(world / "results"), "--out", out, "--boot", "10", "--sizes", ""],
        "export": ["--presets", p, "--out", out, *d],
        "score": [
            str(next((world / "results").rglob("predictions.npz"))),
            "--preset",
            p,
            "--seed",
            "0",
            "--method",
            "again",
            "--out",
            out,
            *d,
        ],
        "release build": [str(world / "results"), "--out", out],
        "release page": [str(world / "release"), "--docs", out],
        "release claims": [str(world / "release"), "--docs", out],
        "release disagreements": [str(world / "release"), "--boot", "2", "--inner", "5"],
        "robustness": [str(world / "results"), "--docs", out, "--boot", "100"],
    }


def _variants(command, base):
    """(where, argv) with one option or argument of ``base`` given each bad value."""
    for param in command.params:
        if param.name == "help" or getattr(param, "is_flag", False):
            continue
        for value in BAD:
            if isinstance(param, click.Argument):
                argv = [value, *base[1:]] if base else [value]
            else:
                opt = param.opts[0]
                argv = [
                    a for i, a in enumerate(base) if a != opt and (i == 0 or base[i - 1] != opt)
                ] + [opt, value]
            yield f"{param.name}={value!r}", argv


def test_every_command_has_a_valid_base_invocation(world):
    assert set(_base(world)) == set(_commands())  # a new command must get one here


@pytest.mark.slow  # every command x option x bad value in process: a few minutes
@pytest.mark.parametrize("name", sorted(_commands()))
def test_bad_values_never_give_a_traceback(world, name, monkeypatch, tmp_path):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.chdir(tmp_path)  # a value taken as a relative folder lands here
    command = _commands()[name]
    base = _base(world)[name]
    bugs = []
    for where, argv in _variants(command, base):
        result = runner.invoke(app, [*name.split(), *argv])
        error = result.exception
        if error is None or isinstance(error, SystemExit):
            if "Traceback" in result.output:
                bugs.append(f"{where}: printed a traceback")
        elif not isinstance(error, ONE_LINE):
            bugs.append(f"{where}: {type(error).__name__}: {error}")
        elif isinstance(error, KeyError) and not error.args:
            bugs.append(f"{where}: a KeyError without a message")
    assert not bugs, f"udora {name}:\n" + "\n".join(bugs) + "\n" + json.dumps(base)
