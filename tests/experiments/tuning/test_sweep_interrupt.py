"""Ctrl-C on a real ``udora tune`` / ``udora sweep run``: exit 130, finished trials kept, resume
completes the sweeps with the same proposals an uninterrupted run makes."""

import json
import signal
import subprocess

import pytest
from processes import ENV, EXE, alive, children, kill_a_worker_in_flight, wait_for

TRIALS = "*/trial-*/trial.json"


def _tune(path, data, out, jobs, trials=6):
    where = ["--presets", str(path), "--data-dir", str(data), "--out", str(out)]
    return [
        EXE,
        "tune",
        *where,
        "--methods",
        "blr,gp_linear",
        "--trials",
        str(trials),
        "--jobs",
        str(jobs),
    ]


def _records(out):
    """{(sweep folder name, k): trial record} of every finished trial under ``out/sweeps``."""
    return {
        (p.parent.parent.name, json.loads(p.read_text())["k"]): json.loads(p.read_text())
        for p in (out / "sweeps").glob(TRIALS)
    }


def _interrupt_then_resume(path, data, out, jobs):
    proc = subprocess.Popen(
        _tune(path, data, out, jobs),
        env=ENV,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert wait_for(lambda: len(list((out / "sweeps").glob(TRIALS))) >= 3, 90), "never started"
    kids = children(proc.pid)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=30)
    text = proc.stdout.read()
    assert proc.returncode == 130, text
    assert "interrupted:" in text and "rerun to resume" in text and "Traceback" not in text
    assert wait_for(lambda: not alive(kids), 5), f"left running: {alive(kids)}"
    kept = _records(out)
    assert 3 <= len(kept) < 12 and all(r["status"] == "ok" for r in kept.values())
    resumed = subprocess.run(
        _tune(path, data, out, jobs), env=ENV, text=True, capture_output=True, timeout=300
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"{12 - len(kept)} trials ran now" in resumed.stdout
    after = _records(out)
    for key, record in kept.items():  # finished trials are read back, never redone
        assert after[key] == record
    return after


@pytest.mark.slow
@pytest.mark.parametrize("jobs", [2, 1])
def test_ctrl_c_keeps_finished_trials_and_resume_completes_every_sweep(tiny_preset, tmp_path, jobs):
    path, data = tiny_preset
    after = _interrupt_then_resume(path, data, tmp_path / "tuned", jobs)
    sweeps = {name for name, _ in after}
    assert len(sweeps) == 2
    for name in sweeps:  # trial numbers 0..5, each once
        assert sorted(k for n, k in after if n == name) == list(range(6))
    for method in ("blr", "gp_linear"):
        tuned = (tmp_path / "tuned" / "tiny" / f"{method}.yaml").read_text()
        assert "trials:\n  ok: 6\n  failed: 0" in tuned


@pytest.mark.slow
def test_an_interrupted_sweep_proposes_what_an_uninterrupted_one_does(tiny_preset, tmp_path):
    """Proposals depend only on earlier results (seeded by the sweep hash and the trial
    count), never on when the workers finish or where the run was cut."""
    path, data = tiny_preset
    cut = _interrupt_then_resume(path, data, tmp_path / "cut", 2)
    whole = subprocess.run(
        _tune(path, data, tmp_path / "whole", 1),
        env=ENV,
        text=True,
        capture_output=True,
        timeout=300,
    )
    assert whole.returncode == 0, whole.stdout + whole.stderr
    straight = _records(tmp_path / "whole")
    assert set(cut) == set(straight)
    for key in straight:
        assert cut[key]["params"] == straight[key]["params"], key
        assert cut[key]["value"] == straight[key]["value"], key


@pytest.mark.slow
def test_a_trial_whose_worker_is_killed_is_recorded_failed_and_tuning_goes_on(
    tiny_preset, tmp_path
):
    """kill -9 of the worker running a trial: that trial is `failed` with the signal, the
    sweeps finish their trials and the tuned files are written."""

    path, data = tiny_preset
    out = tmp_path / "tuned"
    cmd = [
        EXE,
        "tune",
        "--presets",
        str(path),
        "--data-dir",
        str(data),
        "--out",
        str(out),
        "--methods",
        "nn_ensemble",
        "--trials",
        "4",
        "--jobs",
        "2",
        "--set",
        "n_epochs=30",
    ]
    proc = subprocess.Popen(
        cmd, env=ENV, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    kill_a_worker_in_flight(out / "sweeps")  # a quick nn_ensemble trial takes seconds
    text, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, text
    records = _records(out)
    failed = [r for r in records.values() if r["status"] != "ok"]
    assert len(records) == 4 and len(failed) == 1, text
    assert failed[0]["error"].startswith("the worker process running it died of SIGKILL")
    assert (out / "tiny" / "nn_ensemble.yaml").is_file()
