"""Ablation studies: the YAML spec, its errors, the grid it resolves, and `udora ablate`."""

import json

import pytest
import yaml
from typer.testing import CliRunner

from udora.experiments.cli import app
from udora.experiments.study import (
    STUDY_FILE,
    StudyError,
    load_study,
    shipped_studies,
    study_from_factor,
    study_runs,
)

runner = CliRunner()


@pytest.mark.parametrize("name", shipped_studies())
def test_every_shipped_study_resolves_its_whole_grid(name, shared_data):
    study = load_study(name)
    runs = study_runs(study, shared_data)
    n = len(study.preset_names()) * len(study.methods) * len(study.levels) * len(study.seeds)
    assert len(runs) == n
    values = {json.dumps(r.overrides[study.factor]) for r in runs}
    assert values == {json.dumps(v) for v in study.level_values()}


def test_paper_studies_are_shipped():
    assert {"width", "depth", "activation"} <= set(shipped_studies())
    width = load_study("width")
    assert width.factor == "width" and width.scale == "log2"
    assert width.positions() == [4.0, 5.0, 6.0, 7.0, 8.0]


def _write(tmp_path, **study):
    base = {"name": "s", "factor": "alpha", "levels": [0.1, 1.0], "methods": ["blr"]}
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump({**base, **study}))
    return path


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"levels": [0.1]}, r"levels: .*at least two levels"),
        ({"levels": [1, 1]}, r"levels must be distinct"),
        ({"scale": "log2", "levels": ["relu", "tanh"]}, r"scale log2 needs positive numeric"),
        ({"scale": "log2", "levels": [0, 1]}, r"scale log2 needs positive numeric"),
        ({"scale": "cubic"}, r"scale: "),
        ({"seeds": [0, 0]}, r"seeds must be distinct"),
        ({"widthh": 3}, r"widthh: Extra inputs are not permitted"),
        ({"set": {"alpha": 1.0}}, r"'alpha' is the factor"),
        ({"methods": []}, r"methods: "),
    ],
)
def test_study_file_errors_name_the_file_and_key(tmp_path, fields, message):
    path = _write(tmp_path, **fields)
    with pytest.raises(StudyError, match=rf"{path.name}: .*{message}"):
        load_study(path)


def test_study_file_unreadable_or_unknown(tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: [unclosed\n")
    with pytest.raises(StudyError, match=r"broken.yaml: not valid YAML"):
        load_study(broken)
    with pytest.raises(StudyError, match=r"nope: no such study file or shipped study; shipped: "):
        load_study("nope")


def test_a_level_a_method_rejects_is_named_before_anything_runs(tiny_preset, tmp_path):
    path, data = tiny_preset
    study = study_from_factor("alpha=0.5,-1", methods=["blr"], seeds=[0], presets=[str(path)])
    with pytest.raises(StudyError, match=r"--factor: level -1: .*alpha"):
        study_runs(study, data, origin="--factor")
    other = study_from_factor("width=8,16", methods=["blr"], seeds=[0], presets=[str(path)])
    with pytest.raises(StudyError, match=r"level 8: .*unknown field.*width"):
        study_runs(other, data)


def test_ablate_runs_the_grid_resumes_and_writes_the_study(tiny_preset, tmp_path):
    path, data = tiny_preset
    out = tmp_path / "abl"
    args = ["ablate", "--factor", "alpha=0.01,1.0,100.0", "--scale", "log2", "--methods",
            "blr", "--presets", str(path), "--seeds", "0,1", "--data-dir", str(data),
            "--out", str(out)]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "study alpha: alpha at 3 levels ['0.01', '1.0', '100.0'], 6 runs" in result.output
    records = [json.loads(p.read_text()) for p in out.glob("tiny/blr/*/seed-*/result.json")]
    assert sorted(r["config"]["alpha"] for r in records) == [0.01, 0.01, 1.0, 1.0, 100.0, 100.0]
    assert load_study(out / STUDY_FILE).factor == "alpha"
    again = runner.invoke(app, args)
    assert again.exit_code == 0 and "0 ran, 0 failed, 0 skipped, 6 already done" in again.output
    other = runner.invoke(app, [*args[:2], "alpha=0.5,2.0", *args[3:]])
    assert other.exit_code == 2 and "another study's results are in" in other.output


def test_ablate_needs_a_file_or_a_factor(tmp_path):
    neither = runner.invoke(app, ["ablate", "--out", str(tmp_path)])
    assert neither.exit_code == 2 and "give a study file or --factor" in neither.output
    no_methods = runner.invoke(app, ["ablate", "--factor", "width=16,32", "--out", str(tmp_path)])
    assert no_methods.exit_code == 2 and "--factor needs --methods" in no_methods.output
