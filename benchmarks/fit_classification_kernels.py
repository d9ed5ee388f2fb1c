"""Fit a GP classification kernel on real labels and compare the classifier with baselines.

Usage: ``python benchmarks/fit_classification_kernels.py banknote phoneme [--rows N]
[--seed S] [--families rbf,matern52] [--json out.json]`` (``all`` for every table).

For each dataset ``$UDORA_DATA_DIR/classification/<name>.csv.gz`` (feature columns, then
``target`` coded 0..C-1): non-negative columns with a heavy right tail (skewness above 5)
get ``log1p``; eeg_eye_state's 4 rows with values outside [3000, 6000] are dropped
(SOURCES.md); every column is z-scored with the table's mean and sd. Then
:func:`udora.oracle.classification.fit.select_family` draws ``rows`` rows with the seed,
fits each family on 80% of them and chooses by the log loss on the other 20%. The same
split scores logistic regression (scikit-learn, default L2, C = 1) and a gradient-boosted
tree (``HistGradientBoostingClassifier``, defaults) for comparison.
"""

from __future__ import annotations

import os

# One XLA thread per process, as udora's workers run (experiments/grid/workers.py); on a
# busy 2-core machine XLA's Eigen pool otherwise slows the fit several times over.
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import skew
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression

from udora.oracle.classification.fit import FAMILIES, held_out_scores, select_family, split_rows

DATASETS = (
    "banknote", "phoneme", "pima", "spambase", "magic", "electricity", "eeg_eye_state",
    "credit_default", "vehicle", "segment", "satimage", "pendigits", "dry_bean", "letter",
)  # fmt: skip


def load(name: str, data_dir: Path) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(Z (N, d) z-scored, labels (N,), notes on what was transformed)."""
    table = pd.read_csv(data_dir / "classification" / f"{name}.csv.gz")
    X = table.drop(columns="target").to_numpy(dtype=np.float64)
    labels = table["target"].to_numpy(dtype=np.int64)
    notes = []
    if name == "eeg_eye_state":
        keep = np.all((X > 3000) & (X < 6000), axis=1)
        X, labels = X[keep], labels[keep]
        notes.append(f"dropped {int((~keep).sum())} extreme rows")
    heavy = [j for j in range(X.shape[1]) if X[:, j].min() >= 0 and skew(X[:, j]) > 5]
    X[:, heavy] = np.log1p(X[:, heavy])
    if heavy:
        notes.append(f"log1p on {len(heavy)} columns")
    sd = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0), labels, notes


def baselines(Z, labels, fit_rows, held) -> dict[str, dict[str, float]]:
    """Held-out log loss and accuracy of logistic regression and a boosted tree."""
    out = {}
    models = {
        "logistic": LogisticRegression(max_iter=2000),
        "boosted_tree": HistGradientBoostingClassifier(random_state=0),
    }
    for name, model in models.items():
        model.fit(Z[fit_rows], labels[fit_rows])
        proba = np.full((held.size, int(labels.max()) + 1), 1e-15)
        proba[:, model.classes_] = np.clip(model.predict_proba(Z[held]), 1e-15, 1.0)
        out[name] = held_out_scores(np.log(proba), labels[held])
    return out


def run(name: str, data_dir: Path, rows: int | None, seed: int, families) -> dict:
    Z, labels, notes = load(name, data_dir)
    n_classes = int(labels.max()) + 1
    t0 = time.perf_counter()
    fit = select_family(
        Z, labels, n_classes, families=families, rows=rows, seed=seed, progress=print
    )
    seconds = time.perf_counter() - t0
    fit_rows, held = split_rows(Z.shape[0], n_classes, rows=rows, seed=seed)  # select's split
    return {
        "dataset": name,
        "classes": n_classes,
        "notes": notes,
        "family": fit.record["family"],
        "kernel": fit.kernel,
        "mean": fit.mean,
        "gp": fit.record["selection"][fit.record["family"]],
        "baselines": baselines(Z, labels, fit_rows, held),
        "record": fit.record,
        "seconds": round(seconds, 1),
    }


def summary(r: dict) -> str:
    stat, lin = r["kernel"]
    ls = np.asarray(stat["lengthscale"])
    lines = [
        f"== {r['dataset']} (C={r['classes']}; {'; '.join(r['notes']) or 'no transforms'})",
        f"family {r['family']}: amplitude {stat['variance']:.3g}, linear {lin['variance']:.3g}, "
        f"lengthscales min/median/max {ls.min():.3g}/{np.median(ls):.3g}/{ls.max():.3g}, "
        f"active {r['record']['active']}",
        "  "
        + ", ".join(
            f"{f}: {v['log_loss']:.4f}/{v['accuracy']:.3f}"
            for f, v in r["record"]["selection"].items()
        ),
    ]
    for who, s in [("GP", r["gp"]), *r["baselines"].items()]:
        lines.append(f"  {who:13s} log loss {s['log_loss']:.4f}  accuracy {s['accuracy']:.3f}")
    lines.append(f"  seconds {r['seconds']}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="+")
    parser.add_argument("--rows", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--families", default=",".join(FAMILIES))
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    data_dir = Path(os.environ.get("UDORA_DATA_DIR", "../shared/data"))
    names = DATASETS if args.datasets == ["all"] else args.datasets
    results = []
    for name in names:
        results.append(run(name, data_dir, args.rows, args.seed, args.families.split(",")))
        print(summary(results[-1]), flush=True)
        if args.json:
            args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
