"""Ablation studies: the YAML spec, its errors, the grid it resolves, and `udora ablate`."""

import json
import re

import pytest
import yaml
from tiny_presets import two_tiny_presets
from typer.testing import CliRunner

from udora.experiments.cli.main import app
from udora.experiments.studies.study import (
    STUDY_FILE,
    StudyError,
    load_study,
    shipped_studies,
    study_from_factor,
    study_runs,
)

runner = CliRunner()


@pytest.mark.parametrize(
    "name",
    [n if n == "width" else pytest.param(n, marks=pytest.mark.slow) for n in shipped_studies()],
)
def test_every_shipped_study_resolves_its_whole_grid(name, shared_data):
    study = load_study(name)
    runs = study_runs(study, shared_data)
    n = len(study.preset_names()) * len(study.methods) * len(study.levels) * len(study.seeds)
    assert len(runs) == n
    if study.tune is None:
        values = {json.dumps(r.overrides.flat()[study.factor]) for r in runs}
        assert values == {json.dumps(v) for v in study.level_values()}
    else:  # a tuned study's factor reaches the runs through tuning (see the next tests)
        assert study.tune.trials == 10


def test_paper_studies_are_shipped():
    assert {"width", "depth", "activation", "objective", "optimizer"} <= set(shipped_studies())
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
        ({"widthh": 3}, r"unknown key 'widthh'; the keys are name, description, factor"),
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
    with pytest.raises(StudyError, match=r"broken.yaml: is not valid YAML \(line 2\)"):
        load_study(broken)
    with pytest.raises(StudyError, match=r"nope: no such study file or shipped study; shipped: "):
        load_study("nope")


def test_a_folder_named_like_a_shipped_study_does_not_hide_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "depth").mkdir()  # e.g. the results of `udora ablate depth --out depth`
    assert load_study("depth").factor == "blocks"


def test_a_level_a_method_rejects_is_named_before_anything_runs(tiny_preset, tmp_path):
    path, data = tiny_preset
    study = study_from_factor("alpha=0.5,-1", methods=["blr"], seeds=[0], presets=[str(path)])
    with pytest.raises(StudyError, match=r"--factor: level -1: .*alpha"):
        study_runs(study, data, origin="--factor")
    other = study_from_factor("width=8,16", methods=["blr"], seeds=[0], presets=[str(path)])
    message = (
        r"study: factor 'width': method blr has no such field \(its fields: `udora "
        r"methods blr`\); drop the method or change the factor$"
    )
    with pytest.raises(StudyError, match=message):
        study_runs(other, data)


def test_ablate_runs_the_grid_resumes_and_writes_the_study(tiny_preset, tmp_path):
    path, data = tiny_preset
    out = tmp_path / "abl"
    args = [
        "ablate",
        "--factor",
        "alpha=0.01,1.0,100.0",
        "--scale",
        "log2",
        "--methods",
        "blr",
        "--presets",
        str(path),
        "--seeds",
        "0,1",
        "--data-dir",
        str(data),
        "--out",
        str(out),
    ]
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


@pytest.fixture(scope="module")
def n_train_study(tmp_path_factory):
    """`udora ablate` on preset.n_train (20, 30, 40; log2) for blr and gp_oracle on two
    tiny presets, seeds 0-2, then `udora report`."""

    root = tmp_path_factory.mktemp("study")
    paths, data = two_tiny_presets(root, std_max=0.6)
    out = root / "abl"
    args = [
        "ablate",
        "--factor",
        "preset.n_train=20,30,40",
        "--scale",
        "log2",
        "--methods",
        "blr,gp_oracle",
        "--presets",
        ",".join(paths),
        "--seeds",
        "0,1,2",
        "--data-dir",
        str(data),
        "--out",
        str(out),
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    report = runner.invoke(app, ["report", str(out)])
    assert report.exit_code == 0, report.output
    return out


def _section(text, heading):
    start = text.index(heading)
    end = text.find("\n### ", start + 1)
    return text[start : end if end > 0 else len(text)]


@pytest.mark.slow
@pytest.mark.parametrize("metric", ["spearman_eu", "spearman_mean_f"])
def test_report_slopes_and_w_equal_a_recomputation_from_the_runs(n_train_study, metric):
    """The issue's check: the report's mean slope and Kendall's W, recomputed from the
    result.json files with scipy (linregress; W from rank sums, no ties)."""
    import re

    import numpy as np
    from scipy import stats

    out = n_train_study
    records = [json.loads(p.read_text()) for p in out.glob("*/*/*/seed-*/result.json")]
    assert len(records) == 2 * 2 * 3 * 3 and all(r["status"] == "ok" for r in records)
    cells = {}
    for r in records:
        key = (r["method"], r["preset"])
        cells.setdefault(key, []).append(
            (np.log2(r["overrides"]["preset.n_train"]), r["metrics"][metric])
        )
    fits = {key: stats.linregress(*zip(*pts, strict=True)) for key, pts in cells.items()}
    slopes = [fit.slope for fit in fits.values()]
    w_per_preset = []
    for preset in ("tinya", "tinyb"):
        grid = np.array(
            [
                [
                    np.mean(
                        [
                            r["metrics"][metric]
                            for r in records
                            if r["preset"] == preset
                            and r["method"] == m
                            and r["overrides"]["preset.n_train"] == n
                        ]
                    )
                    for m in ("blr", "gp_oracle")
                ]
                for n in (20, 30, 40)
            ]
        )
        ranks = np.argsort(np.argsort(grid, axis=1), axis=1) + 1.0  # rank methods per level
        m_raters, n_items = ranks.shape
        s = np.sum((ranks.sum(axis=0) - m_raters * (n_items + 1) / 2) ** 2)
        w_per_preset.append(12 * s / (m_raters**2 * (n_items**3 - n_items)))
    text = _section((out / "report" / "report.md").read_text(), f"### preset_n_train: {metric}")
    reported_slope = float(re.search(r"mean slope ([+-][0-9]+\.[0-9]+)", text).group(1))
    reported_w = float(re.search(r"Kendall's W across levels ([0-9]+\.[0-9]+)", text).group(1))
    assert reported_slope == pytest.approx(np.mean(slopes), abs=5e-5)
    assert reported_w == pytest.approx(np.mean(w_per_preset), abs=5e-4)
    table = text[text.index("| method | tinya") :].split("\n\n")[0].splitlines()
    presets = [c.strip() for c in table[0].split("|")[2:-1]]
    rows = {line.split("|")[1].strip(): line.split("|")[2:-1] for line in table[2:]}
    for (method, preset), fit in fits.items():  # each pair's slope and standard error
        shown = rows[method][presets.index(preset)].strip()
        flat = np.ptp([y for _, y in cells[method, preset]]) == 0  # scipy: se NaN; it is 0
        se = 0.0 if flat else fit.stderr
        assert shown.startswith(f"{fit.slope:+.3f} ± {se:.3f}"), (method, preset, shown)


@pytest.mark.slow
def test_report_of_a_study_has_its_figures(n_train_study):
    text = (n_train_study / "report" / "report.md").read_text()
    assert "## Ablation: preset_n_train" in text
    assert "`preset.n_train` at 20, 30, 40 (log2 scale), 2 methods, 2 presets" in text
    for link in re.findall(r"\]\((ablation_[^)]+\.png)\)", text):
        assert (n_train_study / "report" / link).is_file()
        assert (n_train_study / "report" / link.replace(".png", ".pdf")).is_file()
    assert len(re.findall(r"\]\((ablation_[^)]+\.png)\)", text)) >= 6
    # the HTML report has the section as a page, with the same figures, in its navigation
    page = (n_train_study / "report" / "ablation.html").read_text()
    assert "preset_n_train" in page and page.count('src="ablation_') >= 6
    assert 'href="ablation.html"' in (n_train_study / "report" / "index.html").read_text()


def test_tuned_study_errors():
    base = {"name": "s", "methods": ["blr"]}
    with pytest.raises(ValueError, match=r"only tuning factor is tuning\.objective"):
        load_study_dict({**base, "factor": "tuning.objective", "levels": ["nll", "rmse"]})
    with pytest.raises(ValueError, match=r"tuning\.objective levels are nll and rmse"):
        load_study_dict(
            {**base, "factor": "tuning.objective", "levels": ["nll", "mae"], "tune": {"trials": 2}}
        )


def load_study_dict(data):
    from udora.experiments.studies.study import Study

    return Study(**data)


@pytest.mark.slow
def test_tune_holds_a_field_and_records_it_in_the_protocol(tiny_preset, tmp_path):
    path, data = tiny_preset
    out = tmp_path / "tuned"
    result = runner.invoke(
        app,
        [
            "tune",
            "--presets",
            str(path),
            "--methods",
            "blr,gp_oracle",
            "--trials",
            "3",
            "--set",
            "blr.fit_intercept=false",
            "--data-dir",
            str(data),
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    sweep = yaml.safe_load((out / "sweeps" / "tiny-blr.yaml").read_text())
    assert sweep["parameters"]["fit_intercept"] == {"value": False}
    tuned = yaml.safe_load((out / "tiny" / "blr.yaml").read_text())
    assert tuned["config"]["fit_intercept"] is False and set(tuned["config"]) == {
        "alpha",
        "sigma",
        "fit_intercept",
    }
    assert tuned["protocol"]["fixed"] == {"fit_intercept": False}
    trials = [
        json.loads(p.read_text()) for p in (out / "sweeps").glob("tiny-blr-*/trial-*/trial.json")
    ]
    assert len(trials) == 3 and all(t["config"]["fit_intercept"] is False for t in trials)


def _tuned_study(tiny_preset, tmp_path, name, factor, levels, seeds, trials):
    """Run a study of blr and gp_oracle on the tiny preset, tuned at every level; (its
    results folder, the CLI result)."""
    path, data = tiny_preset
    study = {
        "name": name,
        "factor": factor,
        "levels": levels,
        "presets": [str(path)],
        "methods": ["blr", "gp_oracle"],
        "seeds": seeds,
        "tune": {"trials": trials},
    }
    file = tmp_path / f"{name}.yaml"
    file.write_text(yaml.safe_dump(study))
    out = tmp_path / "abl"
    result = runner.invoke(app, ["ablate", str(file), "--data-dir", str(data), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out, result


@pytest.mark.slow
def test_a_tuned_study_tunes_every_level_then_reports_it(tiny_preset, tmp_path):
    """tuning.objective at nll and rmse: a tune per level, then each level's tuned refits,
    labelled as two tuning protocols and mapped back to the levels by the report."""
    from udora.experiments.results.store import load_runs
    from udora.experiments.studies.section import study_table

    out, result = _tuned_study(
        tiny_preset,
        tmp_path,
        "objective",
        "tuning.objective",
        ["nll", "rmse"],
        seeds=[0, 1],
        trials=3,
    )
    assert "8 runs, tuned per level (3 trials)" in result.output
    for level, metric in (("nll", "val_nll"), ("rmse", "val_rmse")):
        tuned = yaml.safe_load((out / "tuned" / level / "tiny" / "blr.yaml").read_text())
        assert tuned["metric"] == metric and tuned["protocol"]["objective"] == level
    table, _ = load_runs(out)
    rows = study_table(table, load_study(out / STUDY_FILE))
    blr = rows[rows["method"] == "blr"]
    assert sorted(blr["tuning.objective"]) == ["nll", "nll", "rmse", "rmse"]
    assert blr["config"].nunique() == 2  # one config per protocol, never averaged together
    report = runner.invoke(app, ["report", str(out)])
    assert report.exit_code == 0, report.output
    text = (out / "report" / "report.md").read_text()
    assert "## Ablation: objective" in text and "rmse - nll: mean" in text


@pytest.mark.slow
def test_a_preset_factor_is_tuned_level_by_level_with_the_field_held(tiny_preset, tmp_path):
    """preset.truth at gp and warped with a tune block: each level's trials hold its
    family, its tuned files record it, and its runs are drawn under it."""
    from udora.experiments.results.store import load_runs

    out, _ = _tuned_study(
        tiny_preset, tmp_path, "truths", "preset.truth", ["gp", "warped"], seeds=[0], trials=2
    )
    for level in ("gp", "warped"):
        tuned = yaml.safe_load((out / "tuned" / level / "tiny" / "blr.yaml").read_text())
        assert tuned["protocol"]["preset"] == {"truth": level}
        assert not any(k.startswith("preset.") for k in tuned["config"])
        trials = [
            json.loads(p.read_text())
            for p in (out / "tuned" / level / "sweeps").glob("*/trial-*/trial.json")
        ]
        assert len(trials) == 2 and {t["overrides"]["preset.truth"] for t in trials} == {level}
    table, _ = load_runs(out)
    blr = table[table["method"] == "blr"]
    assert sorted(blr["preset.truth"]) == ["gp", "warped"] and blr["config"].nunique() == 2


def test_factor_study_can_tune_and_drops_the_suite_for_presets(tmp_path):
    study = study_from_factor(
        "width=16,32", methods=["nn_ensemble"], seeds=[0], presets=["concrete"], tune_trials=3
    )
    assert study.tune is not None and study.tune.trials == 3 and study.suite is None
    assert study_from_factor("width=16,32", methods=["nn_ensemble"], seeds=[0]).tune is None
    both = runner.invoke(app, ["ablate", "width", "--tune-trials", "3", "--out", str(tmp_path)])
    assert both.exit_code == 2 and "--tune-trials: only with --factor" in both.output
    zero = runner.invoke(
        app,
        [
            "ablate",
            "--factor",
            "width=16,32",
            "--methods",
            "nn_ensemble",
            "--tune-trials",
            "0",
            "--out",
            str(tmp_path),
        ],
    )
    assert zero.exit_code == 2 and "--tune-trials: trials: Input should be greater" in zero.output
