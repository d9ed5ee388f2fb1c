"""Median wall time of fast CLI answers: ``udora --help``, ``udora methods``, a bad preset.

Each command runs ``--repeat`` times (default 5) as a fresh subprocess of the venv's
``udora`` script; prints one line per command with the median in seconds. These answers
must not import JAX (tests/experiments/cli/test_cli.py checks that; this script only times them).

    python benchmarks/bench_cli.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

COMMANDS = (
    ("udora --help", ["--help"]),
    ("udora methods", ["methods"]),
    ("udora run --preset nope --method blr", ["run", "--preset", "nope", "--method", "blr"]),
)


def median_seconds(argv: list[str], repeat: int) -> float:
    """Median wall seconds of ``argv`` over ``repeat`` fresh subprocesses."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(argv, capture_output=True, check=False)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    exe = str(Path(sys.executable).with_name("udora"))
    for label, argv in COMMANDS:
        print(f"{median_seconds([exe, *argv], args.repeat):7.3f} s  {label}")


if __name__ == "__main__":
    main()
