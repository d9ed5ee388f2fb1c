"""The classification presets' page: design, fit, realism and the built tasks' oracle.

Run: ``python -m udora.experiments.preset_tools.classification_table ORACLES OUT.md``
where ``ORACLES`` holds ``udora oracle build`` folders ``<preset>/seed-<s>/``; the page
has one row per shipped classification preset (its ``prepare`` step, fitted family and
bound, and the realism check from its YAML) and, from every built seed, the synthetic
task's Bayes log loss and accuracy (means over seeds), the AU ceiling, the smallest
per-point bulk ESS and split-half Spearman of the mutual information over seeds, draws per
chain and the build's wall seconds. A preset with no built seed shows "not built".
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

from udora.oracle import reading
from udora.oracle.atomic import write_text
from udora.oracle.preset import list_presets, load_preset


def _built(folder: Path, name: str) -> list[dict[str, Any]]:
    """The ``oracle.json`` records of ``name``'s built seeds under ``folder``."""
    return [
        reading.json_object(path)
        for path in sorted((folder / name).glob("seed-*/oracle.json"))
        if path.is_file()
    ]


def _mean(records: list[dict[str, Any]], key: str) -> str:
    values = [r[key] for r in records if isinstance(r.get(key), int | float)]
    return f"{np.mean(values):.3f}" if values else "not built"


def _smallest(values) -> str:
    values = [v for v in values if isinstance(v, int | float)]
    return f"{min(values):.3g}" if values else "-"


def rows(oracles: Path) -> list[dict[str, str]]:
    """One row of strings per classification preset."""
    out = []
    for name in list_presets(kind="classification"):
        p = load_preset(name)
        fit, real = p.fit or {}, p.realism or {}
        built = _built(oracles, name)
        diag = [r.get("diagnostics", {}) for r in built]

        def score(model: str, what: str, real: dict = real) -> str:
            value = real.get(model, {}).get(what)
            return f"{value:.3f}" if isinstance(value, int | float) else "-"

        out.append(
            {
                "preset": name,
                "suite": p.suite,
                "C": str(p.n_classes),
                "d": str(p.d),
                "pool / n": f"{p.pool_size} / {p.n_train}",
                "prepare": (
                    "drop " + str(len(p.prepare.drop_rows)) + " rows" if p.prepare.drop_rows else ""
                )
                + (f"slog {len(p.prepare.slog)} cols" if p.prepare.slog else "")
                or "-",
                "family": str(fit.get("family", "not fitted")),
                "GP ll / acc": f"{score('gp', 'log_loss')} / {score('gp', 'accuracy')}",
                "LR ll / acc": f"{score('logistic_regression', 'log_loss')} / "
                f"{score('logistic_regression', 'accuracy')}",
                "GBT ll / acc": f"{score('boosted_trees', 'log_loss')} / "
                f"{score('boosted_trees', 'accuracy')}",
                "Bayes ll / acc (synthetic)": f"{_mean(built, 'bayes_log_loss')} / "
                f"{_mean(built, 'bayes_accuracy')}",
                "AU ceiling": _mean(built, "au_ceiling_spearman"),
                "min ESS": _smallest(d.get("per_point", {}).get("min_ess_bulk") for d in diag),
                "split-half MI": _smallest(
                    d.get("split_half_spearman", {}).get("mutual_information") for d in diag
                ),
                "seeds built": str(len(built)),
                "draws / chain": ", ".join(str(d.get("draws_per_chain", "?")) for d in diag) or "-",
                "seconds": ", ".join(f"{r.get('seconds_total', float('nan')):.0f}" for r in built)
                or "-",
            }
        )
    return out


def markdown(table: list[dict[str, str]]) -> str:
    """The rows as a Markdown table."""
    columns = list(table[0])
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(r[c] for c in columns) + " |" for r in table]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    oracles, out = Path(sys.argv[1]), Path(sys.argv[2])
    text = out.read_text() if out.is_file() else ""
    start, end = "<!-- table:start -->\n", "<!-- table:end -->"
    body = start + markdown(rows(oracles)) + end
    if start in text and end in text:
        text = text[: text.index(start)] + body + text[text.index(end) + len(end) :]
    else:
        text += "\n" + body + "\n"
    write_text(out, text)
    print(f"wrote {out}")
