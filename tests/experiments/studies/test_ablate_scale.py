"""``udora ablate --factor``: the scale of the slopes chosen from the levels (log2 for
geometric levels or powers of two, linear for evenly spaced ones, ordinal for the rest),
said on the first line; ``--scale`` wins; a study file keeps its own."""

import math

import pytest
from typer.testing import CliRunner

from udora.experiments.cli.main import app
from udora.experiments.studies.scales import choose_scale
from udora.experiments.studies.study import Study, StudyError, load_study, study_from_factor

runner = CliRunner()


@pytest.mark.parametrize(
    ("levels", "scale", "why"),
    [
        ([16, 32, 64], "log2", "geometric levels"),
        ([10, 100, 1000], "log2", "geometric levels"),
        ([0.1, 0.3, 0.9], "log2", "geometric levels"),  # 0.3 / 0.1 is not exactly 3
        ([256, 64, 16], "log2", "geometric levels"),
        ([16, 32, 128], "log2", "powers of two"),
        ([0.25, 1, 2], "log2", "powers of two"),
        ([16, 32], "log2", "geometric levels"),  # two positive levels: per doubling
        ([1, 2, 3], "linear", "evenly spaced levels"),
        ([0, 0.1, 0.2, 0.3], "linear", "evenly spaced levels"),
        ([-1, 1], "linear", "evenly spaced levels"),
        ([1, 2, 5], "ordinal", "numbers neither geometric nor evenly spaced"),
        ([0, 16, 64], "ordinal", "numbers neither geometric nor evenly spaced"),
        (["relu", "tanh"], "ordinal", "levels that are not all numbers"),
        ([True, False], "ordinal", "levels that are not all numbers"),
        ([1, "a"], "ordinal", "levels that are not all numbers"),
    ],
)
def test_choose_scale(levels, scale, why):
    assert choose_scale(levels) == (scale, why)


def test_a_factor_study_gets_the_chosen_scale_and_its_positions():
    study = study_from_factor("width=16,32,64", methods=["nn_ensemble"], seeds=[0])
    assert study.scale == "log2" and study.positions() == [4.0, 5.0, 6.0]
    forced = study_from_factor(
        "width=16,32,64", scale="ordinal", methods=["nn_ensemble"], seeds=[0]
    )
    assert forced.scale == "ordinal" and forced.positions() == [0.0, 1.0, 2.0]
    assert study_from_factor("blocks=1,2,3", methods=["nn_ensemble"], seeds=[0]).scale == "linear"
    alpha = study_from_factor("alpha=0.5,1,2", methods=["blr"], seeds=[0])
    assert alpha.positions() == [math.log2(0.5), 0.0, 1.0]


class Stopped(Exception):
    """Raised where the study would start running."""


def _first_line(monkeypatch, tmp_path, *args):
    """The first line of `udora ablate ARGS --out TMP/abl`, stopped before any run."""
    import udora.experiments.studies.runner as runner_module

    def stop(*_, **__):
        raise Stopped

    monkeypatch.setattr(runner_module, "run_study", stop)
    result = runner.invoke(app, ["ablate", *args, "--out", str(tmp_path / "abl")])
    assert isinstance(result.exception, Stopped), result.output
    return result.output.splitlines()[0]


@pytest.mark.parametrize(
    ("factor", "extra", "said"),
    [
        ("alpha=0.5,1,2", [], "scale: log2 (geometric levels)"),
        ("alpha=1,2,3", [], "scale: linear (evenly spaced levels)"),
        ("alpha=1,2,5", [], "scale: ordinal (numbers neither geometric nor evenly spaced)"),
        ("fit_intercept=true,false", [], "scale: ordinal (levels that are not all numbers)"),
        ("alpha=1,2,4", ["--scale", "linear"], "scale: linear (--scale)"),
    ],
)
def test_ablate_says_the_scale_on_its_first_line(monkeypatch, tmp_path, factor, extra, said):
    line = _first_line(
        monkeypatch,
        tmp_path,
        "--factor",
        factor,
        "--methods",
        "blr",
        "--presets",
        "concrete",
        *extra,
    )
    assert line.startswith("study ") and line.endswith(f"; {said}"), line


def test_a_study_file_keeps_its_scale_and_refuses_scale_and_repeats(monkeypatch, tmp_path):
    study = tmp_path / "alpha.yaml"
    study.write_text(
        "name: a\nfactor: alpha\nlevels: [1, 2, 4]\nscale: linear\n"
        "methods: [blr]\npresets: [concrete]\n"
    )
    line = _first_line(monkeypatch, tmp_path, str(study))
    assert line.endswith("; scale: linear (the study file)"), line
    both = runner.invoke(app, ["ablate", str(study), "--scale", "log2", "--out", str(tmp_path)])
    assert both.exit_code == 2
    assert both.output.splitlines() == ["error: --scale: only with --factor (a file says `scale:`)"]
    with pytest.raises(ValueError, match=r"methods\n.*must be distinct, got \['blr', 'blr'\]"):
        Study(name="x", factor="alpha", levels=[1, 2], methods=["blr", "blr"])
    twice = tmp_path / "twice.yaml"
    twice.write_text(
        "name: t\nfactor: alpha\nlevels: [1, 2]\nmethods: [blr]\npresets: [concrete, concrete]\n"
    )
    with pytest.raises(StudyError, match=r"presets: must be distinct"):
        load_study(twice)
