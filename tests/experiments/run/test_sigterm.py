"""SIGTERM (what ``timeout``, docker and SLURM send) stops a command as Ctrl-C does: the
summary line, finished work kept, no in-flight folder, no worker left, no traceback, and
exit 143 (docs/running.md, "A grid")."""

import signal
import subprocess

import pytest
from processes import ENV, EXE, alive, children, last_line, wait_for

RESULTS = "*/*/*/seed-*/result.json"


def _seeds(n):
    return ",".join(map(str, range(n)))


def _commands(path, data, out):
    """{command: (argv, glob of its finished records under out)}."""
    where = ["--data-dir", str(data), "--out", str(out)]
    return {
        "bench": (
            [
                EXE,
                "bench",
                "--presets",
                str(path),
                "--methods",
                "blr,gp_oracle",
                "--seeds",
                _seeds(40),
                "--jobs",
                "2",
                *where,
            ],
            RESULTS,
        ),
        "ablate": (
            [
                EXE,
                "ablate",
                "--factor",
                "alpha=1,2,4",
                "--presets",
                str(path),
                "--methods",
                "blr",
                "--seeds",
                _seeds(20),
                "--jobs",
                "2",
                *where,
            ],
            RESULTS,
        ),
        "tune": (
            [
                EXE,
                "tune",
                "--presets",
                str(path),
                "--methods",
                "blr,gp_linear",
                "--trials",
                "8",
                "--jobs",
                "2",
                *where,
            ],
            "sweeps/*/trial-*/trial.json",
        ),
        "diagnose": (
            [
                EXE,
                "diagnose",
                "--preset",
                str(path),
                "--method",
                "blr,gp_linear",
                "--n",
                "20,30,40",
                "--draws",
                "4",
                "--jobs",
                "2",
                *where,
            ],
            "**/decomposition.json",
        ),
    }


def _terminate(argv, out, pattern):
    proc = subprocess.Popen(
        argv, env=ENV, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    started = wait_for(lambda: len(list(out.glob(pattern))) >= 2, 120)
    kids = children(proc.pid)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    text = proc.stdout.read()
    assert started, f"never started: {text}"
    return proc.returncode, text, kids


@pytest.mark.parametrize(
    "command",
    [pytest.param(c, marks=pytest.mark.slow) for c in ("bench", "ablate", "tune", "diagnose")],
)
def test_sigterm_stops_like_ctrl_c_with_exit_143(tiny_preset, tmp_path, command):
    path, data = tiny_preset
    out = tmp_path / "out"
    argv, pattern = _commands(path, data, out)[command]
    code, text, kids = _terminate(argv, out, pattern)
    assert code == 143, text
    assert "interrupted" in last_line(text) and "Traceback" not in text, text
    assert "leaked semaphore" not in text and "resource_tracker" not in text, text
    assert wait_for(lambda: not alive(kids), 5), f"left running: {alive(kids)}"
    assert not list(out.rglob(".inflight-*")) and not list(out.rglob(".seed-*.tmp"))


def test_sigterm_in_process_is_an_interrupt_with_exit_code_143():
    import os
    import time

    from udora.experiments.run import interrupts

    with pytest.raises(KeyboardInterrupt), interrupts.catch_interrupts():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.5)
    assert interrupts.exit_code() == 143
    with pytest.raises(KeyboardInterrupt), interrupts.catch_interrupts():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.5)
    assert interrupts.exit_code() == 130
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # restored


def test_an_interrupt_inside_a_deferred_block_waits_for_its_end():
    import os
    import time

    from udora.experiments.run import interrupts

    steps = []
    with pytest.raises(KeyboardInterrupt), interrupts.catch_interrupts():
        with interrupts.deferred():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.3)
            steps.append("finished the block")  # not cut in the middle
        steps.append("after the block")  # never reached: the interrupt is raised at its end
    assert steps == ["finished the block"]
