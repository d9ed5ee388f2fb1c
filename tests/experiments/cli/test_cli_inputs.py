"""Lists and paths on the command line: an empty value is a user error, never "all of them"
or the current folder; a repeated preset, method or seed runs once and says so; the
parsers of :mod:`udora.experiments.run.checks` that every command shares."""

import json

import pytest
from typer.testing import CliRunner

from udora.experiments.cli.main import app
from udora.experiments.run.checks import UsageError, once_each, parse_names
from udora.experiments.tuning import sweep_file

runner = CliRunner()

# the library functions that the commands call to run or write something
ENTRY_POINTS = {
    "bench": "udora.experiments.grid.bench.run_grid",
    "tune": "udora.experiments.tuning.tune.tune_many",
    "ablate": "udora.experiments.studies.runner.run_study",
    "diagnose": "udora.experiments.diagnostics.runner.run_diagnoses",
    "sweep": "udora.experiments.tuning.sweeps.run_sweep",
    "report": "udora.experiments.report.write.write_report",
    "run": "udora.experiments.run.execute.run_one",
}


class Called(Exception):
    """Raised by a recording stand-in: the command got as far as running something."""


@pytest.fixture
def calls(monkeypatch):
    """Every library entry point records its arguments and stops the command there."""
    import importlib

    for target in ENTRY_POINTS.values():  # imported first: none may bind another's stand-in
        importlib.import_module(target.rpartition(".")[0])
    seen: dict[str, tuple] = {}
    for name, target in ENTRY_POINTS.items():

        def record(*args, _name=name, **kwargs):
            seen[_name] = (args, kwargs)
            raise Called(_name)

        monkeypatch.setattr(target, record)
    return seen


@pytest.fixture
def cwd(tmp_path, monkeypatch):
    """An empty current folder: a command given ``--out ''`` must write nothing in it."""
    here = tmp_path / "cwd"
    here.mkdir()
    monkeypatch.chdir(here)
    return here


def test_parse_names_refuses_empty_values_and_items():
    assert parse_names(" a, b ,a", "--x") == ["a", "b", "a"]
    with pytest.raises(UsageError, match=r"^--presets: expected comma-separated names, got ''$"):
        parse_names("", "--presets")
    with pytest.raises(UsageError, match=r"^--m: expected comma-separated names, got ' , '$"):
        parse_names(" , ", "--m")
    with pytest.raises(UsageError, match=r"got an empty item in 'a,,b'$"):
        parse_names("a,,b", "--m")
    with pytest.raises(UsageError, match=r"got an empty item in 'a,'$"):
        parse_names("a,", "--m")


def test_once_each_keeps_the_first_order_and_names_the_repeats():
    assert once_each(["b", "a", "b"], "--methods") == (
        ["b", "a"],
        "note: --methods lists b twice; it runs once",
    )
    assert once_each([0, 0, 1, 1, 1], "--seeds") == (
        [0, 1],
        "note: --seeds lists 0 twice, 1 3 times; each runs once",
    )
    assert once_each(["x"], "--m") == (["x"], None)


def _sweep_yaml(tmp_path):
    config = sweep_file.sweep_config("concrete", "blr", trials=2)
    return str(sweep_file.write_sweep_config(config, tmp_path / "s.yaml"))


GRID = ["--presets", "concrete", "--methods", "blr"]
CASES = {  # command line -> the one error line
    "bench --presets": (
        ["bench", "--presets", "", "--methods", "blr", "--out", "o"],
        "--presets: expected comma-separated preset names or YAML paths, got ''",
    ),
    "bench --methods": (
        ["bench", "--presets", "concrete", "--methods", "", "--out", "o"],
        "--methods: expected comma-separated method names, got ''",
    ),
    "bench --seeds": (
        ["bench", *GRID, "--seeds", "", "--out", "o"],
        "--seeds: expected comma-separated non-negative integers, got ''",
    ),
    "bench --out": (["bench", *GRID, "--out", ""], "--out: expected a folder, got ''"),
    "bench --tuned": (
        ["bench", *GRID, "--tuned", "", "--out", "o"],
        "--tuned: expected a folder, got ''",
    ),
    "bench trailing comma": (
        ["bench", "--presets", "concrete,", "--methods", "blr", "--out", "o"],
        "--presets: expected comma-separated preset names or YAML paths, "
        "got an empty item in 'concrete,'",
    ),
    "run --out": (
        ["run", "--preset", "concrete", "--method", "blr", "--out", ""],
        "--out: expected a folder, got ''",
    ),
    "tune --presets": (
        ["tune", "--presets", "", "--methods", "blr", "--out", "o"],
        "--presets: expected comma-separated preset names or YAML paths, got ''",
    ),
    "tune --methods": (
        ["tune", "--presets", "concrete", "--methods", "", "--out", "o"],
        "--methods: expected comma-separated method names, got ''",
    ),
    "tune --out": (["tune", *GRID, "--out", ""], "--out: expected a folder, got ''"),
    "ablate --presets": (
        ["ablate", "--factor", "alpha=1,2", "--methods", "blr", "--presets", "", "--out", "o"],
        "--presets: expected comma-separated preset names or YAML paths, got ''",
    ),
    "ablate --methods": (
        ["ablate", "--factor", "alpha=1,2", "--methods", "", "--out", "o"],
        "--methods: expected comma-separated method names, got ''",
    ),
    "ablate --seeds": (
        ["ablate", "--factor", "alpha=1,2", *GRID, "--seeds", "", "--out", "o"],
        "--seeds: expected comma-separated non-negative integers, got ''",
    ),
    "ablate --factor": (
        ["ablate", "--factor", "", *GRID, "--out", "o"],
        "--factor: expected key=value1,value2,..., got ''",
    ),
    "ablate empty level": (
        ["ablate", "--factor", "alpha=1,,2", *GRID, "--out", "o"],
        "--factor: expected comma-separated levels of alpha, got an empty item in '1,,2'",
    ),
    "ablate --out": (
        ["ablate", "--factor", "alpha=1,2", *GRID, "--out", ""],
        "--out: expected a folder, got ''",
    ),
    "diagnose --preset": (
        ["diagnose", "--sanity", "--preset", "", "--out", "o"],
        "--preset: expected comma-separated preset names or YAML paths, got ''",
    ),
    "diagnose --method": (
        ["diagnose", "--preset", "concrete", "--method", "", "--out", "o"],
        "--method: expected comma-separated method names, got ''",
    ),
    "diagnose --n": (
        ["diagnose", "--preset", "concrete", "--method", "blr", "--n", "", "--out", "o"],
        "--n: expected comma-separated training sizes, got ''",
    ),
    "diagnose --out": (
        ["diagnose", "--preset", "concrete", "--method", "blr", "--out", ""],
        "--out: expected a folder, got ''",
    ),
    "sweep run --out": (["sweep", "run", "SWEEP", "--out", ""], "--out: expected a folder, got ''"),
    "sweep run --tuned-out": (
        ["sweep", "run", "SWEEP", "--out", "o", "--tuned-out", ""],
        "--tuned-out: expected a folder, got ''",
    ),
    "sweep init --out": (
        ["sweep", "init", "--preset", "concrete", "--method", "blr", "--out", ""],
        "--out: expected a file path, got ''",
    ),
    "meta --out": (["meta", "RESULTS", "--out", ""], "--out: expected a folder, got ''"),
    "meta --configs": (
        ["meta", "RESULTS", "--configs", ""],
        "--configs: expected comma-separated patterns, got ''",
    ),
    "report --out": (["report", "RESULTS", "--out", ""], "--out: expected a folder, got ''"),
    "oracle build --out": (
        ["oracle", "build", "--preset", "concrete", "--out", ""],
        "--out: expected a folder, got ''",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_an_empty_value_is_one_error_line_and_nothing_runs(case, calls, cwd, tmp_path):
    args, line = CASES[case]
    results = tmp_path / "results"
    results.mkdir()
    sweep = _sweep_yaml(tmp_path)
    args = [{"SWEEP": sweep, "RESULTS": str(results)}.get(a, a) for a in args]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, (case, result.output, result.exception)
    assert result.output.splitlines() == [f"error: {line}"]
    assert not calls and not any(cwd.iterdir()) and not any(results.iterdir())


def _grid(calls) -> list[tuple[str, str, int]]:
    (runs, _out), _ = calls["bench"]
    return [(r.preset.name, r.method, r.seed) for r in runs]


def test_bench_runs_a_repeated_preset_method_or_seed_once(calls, tmp_path):
    args = [
        "bench",
        "--presets",
        "concrete,concrete",
        "--methods",
        "gp_linear,blr,gp_linear",
        "--seeds",
        "1,0,1",
        "--out",
        str(tmp_path / "o"),
    ]
    result = runner.invoke(app, args)
    assert isinstance(result.exception, Called), result.output
    # first appearances, in the grid's order: preset, then seed (one task's runs together)
    assert _grid(calls) == [
        ("concrete", "gp_linear", 1),
        ("concrete", "blr", 1),
        ("concrete", "gp_linear", 0),
        ("concrete", "blr", 0),
    ]
    assert result.output.splitlines() == [
        "note: --presets lists concrete twice; it runs once",
        "note: --methods lists gp_linear twice; it runs once",
        "note: --seeds lists 1 twice; it runs once",
    ]


def test_tune_and_diagnose_run_a_repeated_name_once(calls, tmp_path):
    tune = runner.invoke(
        app,
        [
            "tune",
            "--presets",
            "concrete,concrete",
            "--methods",
            "blr,blr",
            "--out",
            str(tmp_path / "t"),
        ],
    )
    assert isinstance(tune.exception, Called), tune.output
    assert calls["tune"][0][0] == [("concrete", "blr")]
    assert "note: --methods lists blr twice; it runs once" in tune.output.splitlines()
    diag = runner.invoke(
        app,
        [
            "diagnose",
            "--preset",
            "concrete,concrete",
            "--method",
            "blr",
            "--n",
            "100,100",
            "--out",
            str(tmp_path / "d"),
        ],
    )
    assert isinstance(diag.exception, Called), diag.output
    (diagnoses, _), _ = calls["diagnose"]
    assert [(d.run.preset.name, d.run.preset.n_train) for d in diagnoses] == [("concrete", 100)]
    assert diag.output.splitlines()[:2] == [
        "note: --preset lists concrete twice; it runs once",
        "note: --n lists 100 twice; it runs once",
    ]


def test_bench_and_ablate_count_a_repeat_once_end_to_end(tiny_preset, tmp_path):
    path, data = tiny_preset
    out = tmp_path / "res"
    twice = ["--presets", f"{path},{path}", "--methods", "blr,blr", "--seeds", "0,0"]
    bench = runner.invoke(app, ["bench", *twice, "--data-dir", str(data), "--out", str(out)])
    assert bench.exit_code == 0, bench.output
    assert "1 ran, 0 failed, 0 skipped, 0 already done" in bench.output
    assert len(list(out.glob("tiny/blr/*/seed-0/result.json"))) == 1
    abl = tmp_path / "abl"
    ablate = runner.invoke(
        app, ["ablate", "--factor", "alpha=1,2", *twice, "--data-dir", str(data), "--out", str(abl)]
    )
    assert ablate.exit_code == 0, ablate.output
    assert "study alpha: alpha at 2 levels ['1', '2'], 2 runs" in ablate.output
    assert "2 ran, 0 failed, 0 skipped, 0 already done" in ablate.output
    assert "note: --methods lists blr twice; it runs once" in ablate.output.splitlines()
    records = [json.loads(p.read_text()) for p in abl.glob("tiny/blr/*/seed-0/result.json")]
    assert sorted(r["config"]["alpha"] for r in records) == [1.0, 2.0]
