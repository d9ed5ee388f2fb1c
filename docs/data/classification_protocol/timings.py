"""The classification protocol's wall time per phase, from what is committed: each part's
times.txt (tuning, bench and noise-floor wall seconds, two workers on 2 cores, and the
rerun of laplace and fsp_laplace where rerun_laplace.sh made one), its oracle
records (each sampled oracle's build seconds), its rows (each run's fit, predict and
score seconds) and the sweeps' trial records (each tuning trial's seconds, per method),
and the issue's budget: tuning plus refits, one core per trial or run, on 2 cores with the
oracles cached (the runs' seconds exclude the builds: a run reads its task's cached oracle).
Usage (from the repository root): python docs/data/classification_protocol/timings.py"""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pandas as pd

HERE = Path(__file__).parent
SWEEPS = HERE.parent / "tuned" / "classification" / "sweeps.tar.gz"


def phases() -> pd.DataFrame:
    """One row per landed preset: tune, bench and floor seconds (times.txt), the oracle
    builds' seconds (sum and largest of its tasks) and the runs' fit+predict+score
    seconds (one core each, summed)."""
    rows = []
    for part in sorted(p for p in (HERE / "parts").iterdir() if (p / "manifest.json").is_file()):
        words = (part / "times.txt").read_text().split()
        tune, bench, floor = (int(words[words.index(k) + 1]) for k in ("tune", "bench", "floor"))
        rerun = int(words[words.index("rerun") + 1]) if "rerun" in words else 0
        builds = [
            json.loads(f.read_text())["meta"]["seconds_total"]
            for f in sorted((part / "oracle").glob("*.json"))
        ]
        table = pd.read_parquet(part / "results.parquet")
        runs = table[["time_fit", "time_predict", "time_score"]].sum(axis=1)
        rows.append(
            {
                "preset": part.name,
                "tune_s": tune,
                "bench_s": bench,
                "floor_s": floor,
                "rerun_s": rerun,  # rerun_laplace.sh: laplace and fsp_laplace again
                "oracle_builds_s": round(sum(builds)),
                "largest_build_s": round(max(builds)),
                "runs": len(table),
                "run_core_s": round(runs.sum()),
            }
        )
    return pd.DataFrame(rows)


def refits() -> pd.DataFrame:
    """One row per method: its landed runs but the noise floor's method-seed variants,
    their summed and median fit+predict+score seconds."""
    from udora.experiments.results.store import method_seed_variants

    tables = [
        pd.read_parquet(part / "results.parquet")
        for part in sorted((HERE / "parts").iterdir())
        if (part / "manifest.json").is_file()
    ]
    table = pd.concat(tables, ignore_index=True)
    table = table[~table["config"].isin(method_seed_variants(table))]
    seconds = table[["time_fit", "time_predict", "time_score"]].sum(axis=1)
    return (
        seconds.groupby(table["method"])
        .agg(runs="size", run_core_s="sum", median_run_s="median")
        .reset_index()
    )


def trials() -> pd.DataFrame:
    """One row per (method, preset) sweep in the committed sweeps: trials, failed, their
    summed and median seconds."""
    rows = []
    with tarfile.open(SWEEPS) as tar:
        for member in tar.getmembers():
            if not member.name.endswith("/trial.json"):
                continue
            record = json.load(io.TextIOWrapper(tar.extractfile(member)))
            params = record["params"]
            rows.append(
                {
                    "method": params["method"],
                    "preset": params["preset"],
                    "status": record["status"],
                    "seconds": record.get("timings", {}).get("trial", float("nan")),
                }
            )
    frame = pd.DataFrame(rows)
    return (
        frame.groupby(["method", "preset"])
        .agg(
            trials=("status", "size"),
            failed=("status", lambda s: int((s != "ok").sum())),
            seconds=("seconds", "sum"),
            median_s=("seconds", "median"),
        )
        .reset_index()
    )


def main() -> None:
    by_preset = phases()
    print("Per preset (wall seconds, two workers on 2 cores; run_core_s: the runs' own")
    print("fit, predict and score seconds, one core each, summed):")
    print(by_preset.to_string(index=False))
    total = by_preset[["tune_s", "bench_s", "floor_s", "rerun_s", "oracle_builds_s", "run_core_s"]]
    total = total.sum()
    print(
        f"\nTotals over {len(by_preset)} presets: "
        + ", ".join(f"{k} {v:.0f}" for k, v in total.items())
    )
    sweeps = trials()
    per_method = sweeps.groupby("method").agg(
        presets=("preset", "nunique"),
        trials=("trials", "sum"),
        failed=("failed", "sum"),
        trial_core_s=("seconds", "sum"),
        median_trial_s=("median_s", "median"),
    )
    per_method["trials_per_min"] = (60 * per_method["trials"] / per_method["trial_core_s"]).round(2)
    print("\nTuning trials per method over the committed sweeps (one core per trial):")
    print(per_method.round(1).reset_index().to_string(index=False))
    runs = refits().set_index("method")
    print(f"\nRefits per method ({by_preset['preset'].nunique()} presets, seeds 0, 1, 2):")
    print(runs.round(1).reset_index().to_string(index=False))
    landed = sweeps[sweeps["preset"].isin(by_preset["preset"])]  # tuning and refits alike
    tuning = landed.groupby("method")["seconds"].sum()
    budget = tuning.add(runs["run_core_s"], fill_value=0)
    print(
        f"\nTuning plus refits over the {len(by_preset)} landed presets, core seconds and "
        "hours on 2 cores (oracles cached):"
    )
    for label, dropped in (
        ("all methods", []),
        ("without ngboost_bag", ["ngboost_bag"]),
        # gp_oracle is a reference that samples the latent posterior again with the
        # oracle's budget: each of its runs costs an oracle build
        ("without ngboost_bag and gp_oracle", ["ngboost_bag", "gp_oracle"]),
    ):
        kept = budget.drop(dropped).sum()
        print(f"  {label}: {kept:.0f} core s, {kept / 2 / 3600:.2f} h on 2 cores")


if __name__ == "__main__":
    main()
