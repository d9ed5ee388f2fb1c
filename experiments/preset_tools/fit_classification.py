"""``udora presets fit`` for a classification preset: the kernel family and its
hyperparameters fitted on the real labels, and the realism check written beside them.

The prepared table (:func:`udora.oracle.classification.task.load_labelled_table`) is
standardised with the whole table's statistics (the units the oracle uses), and
:func:`udora.oracle.classification.fit.select_family` fits every family (EP for binary,
Laplace for multiclass) on the fit rows of one seeded split and keeps the lowest held-out
log loss. On the same split, ``realism`` records the held-out log loss and accuracy of
the GP classifier with the chosen kernel, of a logistic regression and of a
gradient-boosted tree, so a reader can see how hard the real labels are beside the
synthetic task's Bayes scores (docs/classification_presets.md).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from udora.oracle.atomic import write_text
from udora.oracle.preset import load_preset, parse_preset, preset_path, preset_to_yaml

HEADER = (
    "Classification preset: the kernel and means fitted by `udora presets fit` on the real\n"
    "labels (EP for binary, Laplace for multiclass; the family chosen by held-out log loss;\n"
    "see the fit block), and the realism check on the same held-out rows (realism block)."
)


def _scores(proba: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    """Held-out log loss (probabilities floored at 1e-12) and accuracy: (m, C), (m,)."""
    picked = np.maximum(proba[np.arange(labels.size), labels], 1e-12)
    return {
        "log_loss": float(-np.mean(np.log(picked))),
        "accuracy": float(np.mean(np.argmax(proba, axis=1) == labels)),
    }


def _full(model: Any, Z: np.ndarray, n_classes: int) -> np.ndarray:
    """A scikit-learn classifier's probabilities over all C classes (m, C): a class it
    never saw in training gets 0."""
    out = np.zeros((Z.shape[0], n_classes))
    out[:, model.classes_] = model.predict_proba(Z)
    return out


def realism(
    Z: np.ndarray, labels: np.ndarray, n_classes: int, fit_record: dict[str, Any], seed: int
) -> dict[str, Any]:
    """Held-out log loss and accuracy on the real labels, on the split of the fit: the
    GP classifier with the chosen kernel (from the fit's selection table), scikit-learn's
    ``LogisticRegression`` and ``HistGradientBoostingClassifier`` (seeded)."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression

    from udora.oracle.classification.fit import split_rows

    rows = fit_record["rows"]["fit"] + fit_record["rows"]["held_out"]
    split = fit_record["split"]
    fit_rows, held = split_rows(
        Z.shape[0], n_classes, rows=rows, held_out=split["held_out"], seed=split["seed"]
    )
    best = fit_record["selection"][fit_record["family"]]
    out: dict[str, Any] = {
        "held_out_rows": int(held.size),
        "gp": {"log_loss": best["log_loss"], "accuracy": best["accuracy"]},
    }
    models = {
        "logistic_regression": LogisticRegression(max_iter=5000),
        "boosted_trees": HistGradientBoostingClassifier(random_state=seed),
    }
    for name, model in models.items():
        t0 = time.perf_counter()
        model.fit(Z[fit_rows], labels[fit_rows])
        out[name] = _scores(_full(model, Z[held], n_classes), labels[held])
        out[name]["seconds"] = round(time.perf_counter() - t0, 2)
    return out


def fit_classification_and_write(
    name: str,
    *,
    rows: int | None = None,
    seed: int = 0,
    write: bool = False,
    data_dir: str | Path | None = None,
    console: Console | None = None,
):
    """Fit classification preset ``name`` on its real labels, print the families' held-out
    scores and the realism check, and with ``write`` replace its kernel, mean, ``fit``
    and ``realism`` in the YAML. Returns the refitted (validated) preset."""
    from udora.oracle.classification.fit import select_family
    from udora.oracle.classification.task import load_labelled_table
    from udora.oracle.standardise import Standardiser

    console = console or Console()
    preset = load_preset(name)
    t0 = time.perf_counter()
    X, labels, _ = load_labelled_table(preset, data_dir)
    Z = Standardiser.fit(X, np.zeros(X.shape[0])).x(X)
    C = preset.n_classes
    fit = select_family(Z, labels, C, rows=rows, seed=seed, progress=console.print)
    record = {**fit.record, "seconds_total": round(time.perf_counter() - t0, 1)}
    checks = realism(Z, labels, C, record, seed)
    data = preset.model_dump(mode="json", exclude_none=True)
    data["kernel"] = fit.kernel
    mean = fit.mean
    data["mean"] = [float(mean)] if np.ndim(mean) == 0 else [float(m) for m in mean]
    data["fit"] = record
    data["realism"] = checks
    fitted = parse_preset(data, f"fit of {name}")

    table = Table("family", "held-out log loss", "accuracy", "log evidence / point", "s")
    for family, row in record["selection"].items():
        mark = " (chosen)" if family == record["family"] else ""
        table.add_row(
            family + mark,
            f"{row['log_loss']:.4f}",
            f"{row['accuracy']:.3f}",
            f"{row['log_evidence_per_point']:.4f}",
            f"{row['seconds']:.0f}",
        )
    console.print(table)
    for model in ("gp", "logistic_regression", "boosted_trees"):
        s = checks[model]
        console.print(
            f"{model}: held-out log loss {s['log_loss']:.4f}, accuracy {s['accuracy']:.3f}"
        )
    if write:
        path = preset_path(name)
        write_text(path, preset_to_yaml(fitted, HEADER))
        console.print(f"wrote {path}")
    return fitted
