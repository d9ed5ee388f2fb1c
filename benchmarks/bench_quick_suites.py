"""Wall time of the quick classification bench against the quick regression bench, in one
sitting, every cache cold (issue: "at most 1.5x the regression quick bench").

Run: ``UDORA_DATA_DIR=... python benchmarks/bench_quick_suites.py`` (``--jobs``). Runs, one
after the other, as fresh subprocesses of this venv's ``udora``:

    udora bench --quick --out <tmp>/regression            (the README's quick bench)
    udora bench --suite cls-dev --quick --out <tmp>/classification

each with an empty task cache (``UDORA_TASK_CACHE``) and an empty JAX compilation cache
(``UDORA_JAX_CACHE``) of its own, so every oracle is built and every program compiled.
Prints each one's wall seconds, its run count and the ratio.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed_bench(args: list[str], folder: Path) -> tuple[float, str]:
    """Seconds of ``udora bench ARGS --out folder/results`` with cold caches, its last line."""
    env = dict(
        os.environ,
        UDORA_TASK_CACHE=str(folder / "tasks"),
        UDORA_JAX_CACHE=str(folder / "jax"),
    )
    udora = Path(sys.executable).with_name("udora")
    t0 = time.perf_counter()
    done = subprocess.run(
        [str(udora), "bench", *args, "--out", str(folder / "results")],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - t0
    lines = [ln for ln in done.stdout.splitlines() if re.search(r"\bran\b", ln)]
    if done.returncode != 0:
        sys.exit(f"udora bench {' '.join(args)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return seconds, lines[-1] if lines else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args()
    jobs = ["--jobs", str(args.jobs)]
    with tempfile.TemporaryDirectory() as tmp:
        reg_s, reg_line = timed_bench(["--quick", *jobs], Path(tmp) / "regression")
        print(f"regression quick bench:     {reg_s:7.1f} s  ({reg_line})", flush=True)
        cls_s, cls_line = timed_bench(
            ["--suite", "cls-dev", "--quick", *jobs], Path(tmp) / "classification"
        )
        print(f"classification quick bench: {cls_s:7.1f} s  ({cls_line})")
    print(f"ratio classification / regression: {cls_s / reg_s:.2f} (goal <= 1.5)")


if __name__ == "__main__":
    main()
