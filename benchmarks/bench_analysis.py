"""Wall time of ``udora meta`` and ``udora report`` on a large results folder.

Fills ``<out>/results`` with a real grid, ``udora bench`` over ``--suite`` (or ``--presets``) x
``--methods`` x ``--seeds`` seeds (resumable: runs already there are kept, so a second
call only times), then runs ``udora meta`` and ``udora report`` on it ``--repeat`` times
each as fresh subprocesses of the venv's ``udora`` script, and prints the number of runs
and each command's median seconds. The default grid is the dev suite's 7 presets x 5 fast
methods x 20 seeds = 700 runs (the folder size the speed goal names: under 60 s each).

    python benchmarks/bench_analysis.py --out /tmp/analysis-700
    python benchmarks/bench_analysis.py --out /tmp/analysis-small --seeds 2 --presets concrete
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from bench_tuning import run_phase  # this folder is on sys.path when run as a script

# meta ranks 4 or more configs per (preset, seed) besides gp_oracle, which it leaves out
METHODS = "blr,gp_linear,gp_oracle,ngboost_nig,catboost_ps"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--suite", default="dev")
    parser.add_argument("--presets", default=None, help="comma-separated; overrides --suite")
    parser.add_argument("--methods", default=METHODS, help="comma-separated")
    parser.add_argument("--seeds", type=int, default=20, help="seeds 0 .. N-1")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    exe = str(Path(sys.executable).with_name("udora"))
    args.out.mkdir(parents=True, exist_ok=True)
    log, results = args.out / "analysis.log", args.out / "results"
    seeds = ",".join(str(s) for s in range(args.seeds))
    where = ["--presets", args.presets] if args.presets else ["--suite", args.suite]
    grid = [exe, "bench", *where, "--methods", args.methods, "--seeds", seeds]
    fill = run_phase([*grid, "--jobs", str(args.jobs), "--out", str(results)], log)
    runs = sum(
        json.loads(p.read_text()).get("status") == "ok" for p in results.rglob("result.json")
    )
    print(f"{runs} ok runs in {results} (bench {fill:.0f} s, a resume only checks them)")
    commands = {
        "meta": [exe, "meta", str(results), "--out", str(args.out / "meta")],
        "report": [exe, "report", str(results), "--out", str(args.out / "report")],
    }
    for name, argv in commands.items():
        walls = [run_phase(argv, log) for _ in range(args.repeat)]
        spread = ", ".join(f"{w:.1f}" for w in walls)
        median = statistics.median(walls)
        print(f"udora {name}: median {median:.1f} s over {args.repeat} ({spread})")


if __name__ == "__main__":
    main()
