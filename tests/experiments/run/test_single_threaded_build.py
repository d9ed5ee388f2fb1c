"""A sampled task's arrays do not depend on who builds it: the runner's build (a process
of its own on one core with one thread) gives, bit for bit, the arrays of a build run by
hand in a fresh interpreter pinned to one core with XLA's and BLAS's threads capped at one
(as a bench worker on one core runs), whatever this process's cores and threads. Checked
on pima seed 1, whose build from a process with both cores' threads drew other samples
(its class probabilities moved by up to 0.005) before builds were isolated."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from udora.experiments.run.processes import build
from udora.oracle.preset import load_preset

BY_HAND = """
import os, sys
os.sched_setaffinity(0, {int(sys.argv[1])})
import numpy as np
from udora.oracle.kinds import build
from udora.oracle.preset import load_preset
task = build(load_preset("pima"), 1, data_dir=sys.argv[2])
np.savez(sys.argv[3], **task.to_arrays())
"""


@pytest.mark.slow  # two builds of pima's sampled posterior, ~1 minute each
def test_the_runners_build_is_the_single_threaded_build(shared_data, tmp_path):
    core = min(os.sched_getaffinity(0))
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false",
    }
    out = tmp_path / "by_hand.npz"
    args = [sys.executable, "-c", BY_HAND, str(core), str(shared_data), str(out)]
    subprocess.run(args, env=env, check=True, timeout=900)
    task = build(load_preset("pima"), 1, shared_data)  # from this multi-threaded process
    ours = task.to_arrays()
    with np.load(out) as theirs:
        assert sorted(theirs.files) == sorted(ours)
        for name in theirs.files:
            np.testing.assert_array_equal(ours[name], theirs[name], err_msg=name)


def _killed(*_args):
    """A build that dies as the out-of-memory killer ends one (SIGKILL)."""
    import signal

    os.kill(os.getpid(), signal.SIGKILL)


def test_a_build_whose_process_dies_says_how(monkeypatch):
    """A single-threaded build's process killed (the OOM killer, kill -9) is one error
    naming the task and the signal, not a broken process pool."""
    from udora.experiments.run import processes

    monkeypatch.setattr(processes, "_build_packed", _killed)  # sent by reference
    with pytest.raises(RuntimeError) as caught:
        processes.build_single_threaded(load_preset("pima"), 3)
    assert str(caught.value) == (
        "the build of pima seed 3 failed: the process building it died of SIGKILL "
        "(killed: out of memory, or kill -9)"
    )
