"""The tuned protocol end to end: ``udora tune`` then ``udora bench --tuned``; its throughput.

Runs, as fresh subprocesses of the venv's ``udora`` script, the paper's protocol (§5.1,
Appendix D): a bayes sweep of ``--trials`` trials per (preset, method) on a validation
split of the task at ``--tune-seed``, then one refit per method and seed of ``--seeds``
with its tuned config on the whole training sample, scored against the oracle. With a
tuning seed outside ``--seeds`` no scored task is the one a config was chosen on. Prints:

- the wall time of each phase and of the whole protocol;
- trials per minute over the tuning phase (wall clock, all workers together);
- the share of the trials' time spent in JAX tracing, lowering and compiling (each
  trial's ``timings.compile`` over its ``timings.trial``, summed over trials; persistent
  compilation-cache reads count as compiling), and the oracle-analysis overhead;
- per method: its trials, trials per minute of trial time (one worker's rate), the
  compile share, and the median trial and non-compile trial seconds.

``--summarise`` skips running and reads an existing ``--out`` (wall times are then those
the earlier run wrote to ``<out>/protocol.json``). Everything the commands write stays
under ``--out``: ``tuned/`` (configs and ``sweeps/``), ``results/`` and ``report/``.
Rerunning on the same ``--out`` resumes (``tune`` and ``bench`` skip what is done); each
attempt of a phase is recorded in ``protocol.json`` and the printed wall is their sum.

    python benchmarks/bench_tuning.py --suite heldout --trials 10 --jobs 2 --out tuned-heldout
    python benchmarks/bench_tuning.py --suite all --tune-seed 100 --seeds 0,1,2 --out release
    python benchmarks/bench_tuning.py --presets concrete --methods blr,nn_ensemble --trials 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path


def run_phase(argv: list[str], log: Path) -> float:
    """Run ``argv`` with output appended to ``log``; its wall seconds (raises on failure)."""
    t0 = time.perf_counter()
    with log.open("a") as fh:
        fh.write(f"$ {' '.join(argv)}\n")
        fh.flush()
        code = subprocess.run(argv, stdout=fh, stderr=subprocess.STDOUT, check=False).returncode
    if code != 0:
        raise SystemExit(f"{' '.join(argv)} exited {code}; see {log}")
    return time.perf_counter() - t0


def trial_records(sweeps: Path) -> list[dict]:
    out = []
    for path in sorted(sweeps.glob("*/trial-*/trial.json")):
        out.append(json.loads(path.read_text()))
    return out


def phase_walls(out: Path) -> dict[str, float]:
    """Each phase's wall seconds, summed over the attempts ``protocol.json`` records."""
    record = json.loads((out / "protocol.json").read_text())
    walls: dict[str, float] = defaultdict(float)
    for attempt in record["attempts"]:
        walls[attempt["phase"]] += attempt["wall_s"]
    return walls


def summarise(out: Path) -> None:
    walls = phase_walls(out)
    trials = trial_records(out / "tuned" / "sweeps")
    if not trials:
        raise SystemExit(f"no trials under {out / 'tuned' / 'sweeps'}")
    total = sum(t["timings"].get("trial", 0.0) for t in trials)
    compile_s = sum(t["timings"].get("compile", 0.0) for t in trials)
    oracle_s = sum(t["timings"].get("oracle", 0.0) for t in trials)
    ok = sum(t["status"] == "ok" for t in trials)
    per_method: dict[str, list[dict]] = defaultdict(list)
    for t in trials:
        per_method[t["params"]["method"]].append(t["timings"])
    tune_wall = walls["tune"]
    print(f"trials: {len(trials)} ({ok} ok, {len(trials) - ok} failed)")
    print(f"tune wall {tune_wall:.0f} s; {len(trials) / (tune_wall / 60):.2f} trials/min")
    print(f"bench --tuned wall {walls['bench']:.0f} s; report {walls['report']:.0f} s")
    print(f"protocol wall {walls['tune'] + walls['bench'] + walls['report']:.0f} s")
    print(
        f"compile share of trial time {compile_s / total:.1%} "
        f"({compile_s:.0f} of {total:.0f} s summed over trials)"
    )
    share = oracle_s / (total + oracle_s)
    print(f"oracle analysis after each objective: {oracle_s:.0f} s summed ({share:.1%} of all)")
    print(
        f"{'method':<16}{'trials':>7}{'per min':>9}{'compile':>9}{'median s':>10}"
        f"{'median non-compile s':>22}"
    )
    for method, timings in sorted(per_method.items()):
        trial = [t.get("trial", 0.0) for t in timings]
        rest = [t.get("trial", 0.0) - t.get("compile", 0.0) for t in timings]
        summed = sum(trial)
        share = sum(t.get("compile", 0.0) for t in timings) / summed if summed else 0.0
        rate = len(trial) / (summed / 60) if summed else float("nan")
        print(
            f"{method:<16}{len(trial):>7}{rate:>9.2f}{share:>9.1%}"
            f"{statistics.median(trial):>10.1f}{statistics.median(rest):>22.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="heldout")
    parser.add_argument("--presets", default=None, help="comma-separated; overrides --suite")
    parser.add_argument("--methods", default=None, help="comma-separated (default: all)")
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--tune-seed", type=int, default=0, help="seed of the task tuned on")
    parser.add_argument("--seeds", default=None, help="refit seeds (default: --tune-seed)")
    parser.add_argument("--out", type=Path, default=Path("tuned-protocol"))
    parser.add_argument("--summarise", action="store_true", help="only read --out")
    args = parser.parse_args()
    if not args.summarise:
        exe = str(Path(sys.executable).with_name("udora"))
        args.out.mkdir(parents=True, exist_ok=True)
        log = args.out / "protocol.log"
        where = ["--presets", args.presets] if args.presets else ["--suite", args.suite]
        pick = ["--methods", args.methods] if args.methods else []
        jobs = ["--jobs", str(args.jobs)]
        tuned, results = str(args.out / "tuned"), str(args.out / "results")
        tune = [exe, "tune", *where, *pick, "--trials", str(args.trials), *jobs]
        tune += ["--seed", str(args.tune_seed), "--out", tuned]
        seeds = args.seeds if args.seeds is not None else str(args.tune_seed)
        bench = [exe, "bench", *where, *pick, "--seeds", seeds, *jobs]
        bench += ["--tuned", tuned, "--out", results]
        report = [exe, "report", results, "--out", str(args.out / "report")]
        for phase, argv in (("tune", tune), ("bench", bench), ("report", report)):
            record_attempt(args.out, phase, run_phase(argv, log))
    summarise(args.out)


def record_attempt(out: Path, phase: str, wall_s: float) -> None:
    """Append one finished attempt of ``phase`` to ``out/protocol.json``."""
    path = out / "protocol.json"
    record = json.loads(path.read_text()) if path.exists() else {"attempts": []}
    record["attempts"].append({"phase": phase, "wall_s": wall_s, "args": sys.argv[1:]})
    path.write_text(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
