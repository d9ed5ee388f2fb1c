"""Rerun, at the checked-out commit, the tuning trials the committed classification sweeps
record as failed for METHOD (default catboost_ve, whose 10 failures at 787d7cb were
"Not enough trees in model for K virtual Ensembles", fixed in 5482d83), and print each
one's validation log loss beside the best of its sweep's ok trials: would a sweep without
the defect have chosen another config? Same task, seed 100 and validation split as the
sweep. Usage (repository root, UDORA_DATA_DIR set):
python docs/data/classification_protocol/failed_trials.py [METHOD]"""

from __future__ import annotations

import io
import json
import sys
import tarfile
from pathlib import Path

from udora.experiments.tuning.protocol import trial

SWEEPS = Path(__file__).parent.parent / "tuned" / "classification" / "sweeps.tar.gz"


def main(method: str) -> None:
    best: dict[str, float] = {}
    failed = []
    with tarfile.open(SWEEPS) as tar:
        for member in tar.getmembers():
            if not (member.name.endswith("/trial.json") and f"-{method}-" in member.name):
                continue
            record = json.load(io.TextIOWrapper(tar.extractfile(member)))
            preset = record["params"]["preset"]
            if record["status"] == "ok":
                best[preset] = min(best.get(preset, float("inf")), record["value"])
            else:
                failed.append((preset, member.name.split("/")[2], record))
    for preset, name, record in failed:
        seed, objective = record["params"]["seed"], record["objective"]
        result = trial(preset, method, seed, record["overrides"], objective)
        value = result.scores[f"val_{objective}"]
        verdict = "better than" if value < best[preset] else "not better than"
        print(
            f"{preset} {name}: rerun val_{objective} {value:.6f}, {verdict} the sweep's best "
            f"{best[preset]:.6f} (failed then: {str(record['error'])[:60]})"
        )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "catboost_ve")
