"""What laplace's and fsp_laplace's calibration chose in each landed part's runs: refit
each run (its tuned config, method seed and task seed; the task's training sample, no
oracle) and record the prior precision and temperature the validation split picked
(`diagnostics()`), beside the row's EU metrics. The refit is checked to be the run: its
config hash must be the row's, and with RESULTS (the protocol's results folder, on the
machine that ran it) its class probabilities are compared with the run's stored ones
(the refit runs on one core with one thread, as `udora bench --cpus-per-run 1` ran it).
Resumable: rows already in the CSV are kept. Writes laplace_calibration.csv here.
Usage (repository root, UDORA_DATA_DIR set):
    python docs/data/classification_protocol/laplace_calibration.py [RESULTS]"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # before JAX and BLAS load
from udora.experiments.run.processes import cap_threads  # noqa: E402

cap_threads(1)

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import yaml  # noqa: E402

from udora.experiments.run.execute import training_sample  # noqa: E402
from udora.experiments.run.overrides import Overrides  # noqa: E402
from udora.experiments.run.spec import RunSpec, resolve  # noqa: E402
from udora.oracle.atomic import write_bytes  # noqa: E402

HERE = Path(__file__).parent
OUT = HERE / "laplace_calibration.csv"
TUNED = HERE.parent / "tuned" / "classification"
KEY = ["preset", "method", "seed", "method_seed"]


def refit(row: pd.Series, results: Path | None) -> dict:
    """The calibration of the run of ``row`` (a part's row), refitted here."""
    config = yaml.safe_load((TUNED / row.preset / f"{row.method}.yaml").read_text())["config"]
    if not pd.isna(row.method_seed):
        config = {**config, "method_seed": int(row.method_seed)}
    run = resolve(RunSpec(row.preset, row.method, int(row.seed), Overrides.of(config)))
    if run.config_hash != row.config_hash:
        raise SystemExit(f"{row.preset} {row.method} seed {row.seed}: not the row's config")
    sample = training_sample(run.preset, run.seed)
    model = run.make_method()
    model.fit(
        np.array(sample.X_train),
        np.array(sample.y_train),
        seed=run.fit_seed,
        knowledge=sample.knowledge(with_prior=False),
    )
    out = {k: row[k] for k in KEY} | model.diagnostics()
    cfg = model.config
    if "prior_prec" in out:
        out["prior_prec_at_top"] = bool(
            np.isclose(np.log10(out["prior_prec"]), cfg.log_prior_prec_max)
        )
    out["temperature_at_bottom"] = bool(
        np.isclose(np.log10(out["temperature"]), cfg.log_temperature_min)
    )
    for metric in ("calib_log_ratio_eu", "spearman_eu", "nll"):
        out[metric] = row[metric]
    stored = None if results is None else results / row.preset / run.rel_dir / "predictions.npz"
    if stored is not None and stored.is_file():
        prob = model.predict(np.array(sample.X)).prob
        out["max_prob_diff"] = float(np.abs(prob - np.load(stored)["prob"]).max())
    return out


def _key(row) -> tuple:
    ms = row["method_seed"]
    return (row["preset"], row["method"], int(row["seed"]), -1 if pd.isna(ms) else int(ms))


def main() -> None:
    results = Path(sys.argv[1]) if len(sys.argv) > 1 else None
    done = (
        pd.read_csv(OUT, float_precision="round_trip", dtype={"method_seed": "Int64"})
        if OUT.is_file()
        else pd.DataFrame(columns=KEY)
    )
    seen = {_key(r) for r in done.to_dict("records")}
    rows = list(done.to_dict("records"))
    for part in sorted(p for p in (HERE / "parts").iterdir() if (p / "manifest.json").is_file()):
        table = pd.read_parquet(part / "results.parquet")
        if "method_seed" not in table:
            table["method_seed"] = np.nan
        ours = table["method"].isin(["laplace", "fsp_laplace"]) & (table["status"] == "ok")
        for _, row in table[ours].iterrows():
            if _key(row) in seen:
                continue
            rows.append(refit(row, results))
            print(rows[-1], flush=True)
            _write(rows)


def _write(rows: list[dict]) -> None:
    """The table whole or not at all (a kill keeps the last one), method seeds as
    integers: the kept rows' are pandas' NA, a new row's a float NaN, which together
    would print the seeds as floats."""
    table = pd.DataFrame(rows).astype({"method_seed": "Int64"}).sort_values(KEY)
    write_bytes(OUT, table.to_csv(index=False).encode())


if __name__ == "__main__":
    main()
