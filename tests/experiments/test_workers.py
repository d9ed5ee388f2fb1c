"""The crash-tolerant worker pool: a worker that dies fails its call only (workers.run_pool)."""

import signal

import pytest
from processes import times_ten_or_die

from udora.experiments.workers import crash_reason, run_pool


def test_a_call_whose_worker_segfaults_is_reported_and_the_others_finish(tmp_path):
    results, crashes = {}, {}
    calls = [(x, 2) for x in range(6)]
    run_pool(calls, 2, times_ten_or_die, lambda a, v: results.setdefault(a[0], v),
             lambda a, why: crashes.setdefault(a[0], why), tmp_path / "inflight")  # fmt: skip
    assert results == {x: 10 * x for x in (0, 1, 3, 4, 5)}
    assert crashes == {2: "the worker process running it died of SIGSEGV (a native crash)"}
    assert not (tmp_path / "inflight").exists()


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        (-signal.SIGKILL, "died of SIGKILL (killed: out of memory, or kill -9)"),
        (-signal.SIGABRT, "died of SIGABRT (a native abort)"),
        (-signal.SIGUSR1, "died of SIGUSR1"),
        (3, "exited with code 3"),
    ],
)
def test_crash_reasons_name_the_signal(code, reason):
    assert crash_reason(code) == f"the worker process running it {reason}"
    assert "which one is unknown" in crash_reason(None)
