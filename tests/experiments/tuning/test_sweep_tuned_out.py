"""``udora sweep run FILE --tuned-out DIR``: the best trial as the tuned file of ``udora
tune``, which ``udora bench --tuned DIR`` then runs (docs/running.md, "Hyperparameter
sweeps")."""

import json

import yaml
from typer.testing import CliRunner

from udora.experiments.cli.main import app
from udora.experiments.tuning.proposals import sweep_hash
from udora.experiments.tuning.sweep_file import load_sweep_config
from udora.experiments.tuning.trials import load_trials

runner = CliRunner()


def test_a_sweeps_best_trial_feeds_bench_tuned(tiny_preset, tmp_path):
    path, data = tiny_preset
    sweep = tmp_path / "blr.yaml"
    init = runner.invoke(
        app,
        [
            "sweep",
            "init",
            "--preset",
            str(path),
            "--method",
            "blr",
            "--trials",
            "2",
            "--out",
            str(sweep),
        ],
    )
    assert init.exit_code == 0, init.output
    tuned = tmp_path / "tuned"
    run = runner.invoke(
        app,
        [
            "sweep",
            "run",
            str(sweep),
            "--out",
            str(tmp_path / "sweeps"),
            "--data-dir",
            str(data),
            "--tuned-out",
            str(tuned),
        ],
    )
    assert run.exit_code == 0, run.output
    target = tuned / "tiny" / "blr.yaml"
    assert run.output.splitlines()[-1] == (
        f"wrote {target} (best trial-{_best(tuned)['k']}); `udora bench --tuned {tuned}` uses it"
    )
    written = yaml.safe_load(target.read_text())
    best = _best(tuned)
    assert written["config"] == best["overrides"] and written["value"] == best["value"]
    assert written["tuned"] is True and written["best_trial"] == best["k"]
    assert written["trials"] == {"ok": 2, "failed": 0}
    assert written["sweep_file"] == str(sweep)
    assert written["sweep_hash"] == sweep_hash(load_sweep_config(sweep))
    assert written["protocol"] == {
        "search": "bayes",
        "trials": 2,
        "objective": "nll",
        "seed": 0,
        "tuning_val_fraction": 0.2,
    }

    # the same format as `udora tune` writes for the same preset and method
    tune = runner.invoke(
        app,
        [
            "tune",
            "--presets",
            str(path),
            "--methods",
            "blr",
            "--trials",
            "2",
            "--data-dir",
            str(data),
            "--out",
            str(tmp_path / "t"),
        ],
    )
    assert tune.exit_code == 0, tune.output
    by_tune = yaml.safe_load((tmp_path / "t" / "tiny" / "blr.yaml").read_text())
    assert list(written) == list(by_tune) and written["protocol"] == by_tune["protocol"]
    assert {k: written[k] for k in ("preset", "method", "objective", "metric")} == {
        k: by_tune[k] for k in ("preset", "method", "objective", "metric")
    }

    out = tmp_path / "res"
    bench = runner.invoke(
        app,
        [
            "bench",
            "--presets",
            str(path),
            "--methods",
            "blr",
            "--tuned",
            str(tuned),
            "--data-dir",
            str(data),
            "--out",
            str(out),
        ],
    )
    assert bench.exit_code == 0, bench.output
    (result,) = out.glob("tiny/blr/*/seed-0/result.json")
    record = json.loads(result.read_text())
    assert {k: record["config"][k] for k in written["config"]} == written["config"]
    assert record["config_source"]["path"] == str(target)
    assert record["config_source"]["protocol"] == written["protocol"]


def _best(tuned):
    """The best trial on disk of the sweep the tuned file names (lowest validation NLL)."""
    written = yaml.safe_load((tuned / "tiny" / "blr.yaml").read_text())
    return min(load_trials(written["sweep_dir"]), key=lambda t: (t["value"], t["k"]))


def test_tuned_out_must_be_a_folder_before_anything_runs(tiny_preset, tmp_path):
    path, data = tiny_preset
    sweep = tmp_path / "blr.yaml"
    runner.invoke(
        app,
        [
            "sweep",
            "init",
            "--preset",
            str(path),
            "--method",
            "blr",
            "--trials",
            "2",
            "--out",
            str(sweep),
        ],
    )
    afile = tmp_path / "afile"
    afile.write_text("")
    out = tmp_path / "sweeps"
    run = runner.invoke(
        app,
        [
            "sweep",
            "run",
            str(sweep),
            "--out",
            str(out),
            "--data-dir",
            str(data),
            "--tuned-out",
            str(afile),
        ],
    )
    assert run.exit_code == 2
    assert run.output.splitlines() == [f"error: --tuned-out: {afile} is a file, not a folder"]
    assert not out.exists()
