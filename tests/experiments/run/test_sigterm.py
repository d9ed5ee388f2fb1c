"""SIGTERM (what ``timeout``, docker and SLURM send) stops a command as Ctrl-C does: the
summary line, finished work kept, no in-flight folder, no worker left, no traceback, and
exit 143 (docs/running.md, "A grid")."""

import io
import signal
import subprocess
from pathlib import Path

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


def _blocked_signals(thread) -> int:
    """The signal mask of ``thread`` (a bit per signal, bit ``s - 1`` for signal ``s``),
    read from Linux's /proc."""
    status = Path(f"/proc/self/task/{thread.native_id}/status").read_text()
    line = next(line for line in status.splitlines() if line.startswith("SigBlk:"))
    return int(line.split()[1], 16)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads Linux's /proc")
def test_a_progress_display_thread_never_takes_a_ctrl_c():
    """The refresh thread of a progress entered by ``entered_without_signals`` blocks
    SIGINT and SIGTERM (so the kernel gives them to the main thread), and the main
    thread's own mask is as before; a plainly entered one's thread does not block them."""
    import signal
    import threading

    from rich.console import Console
    from rich.progress import Progress

    from udora.experiments.run.interrupts import entered_without_signals

    def refresh_threads(before):
        return [t for t in threading.enumerate() if t not in before]

    console = Console(file=io.StringIO(), force_terminal=True)
    main_before = _blocked_signals(threading.main_thread())
    for wrapped in (True, False):
        before = set(threading.enumerate())
        shown = Progress(console=console, auto_refresh=True)
        manager = entered_without_signals(shown) if wrapped else shown
        with manager:
            (thread,) = refresh_threads(before)
            mask = _blocked_signals(thread)
            assert _blocked_signals(threading.main_thread()) == main_before
        for signum in (signal.SIGINT, signal.SIGTERM):
            assert bool(mask >> (signum - 1) & 1) == wrapped, (wrapped, signum)
