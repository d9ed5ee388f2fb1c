"""Ours-vs-paper summaries of presets (``udora presets show``, docs/presets.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from udora.oracle.preset import Preset, load_preset
from udora.oracle.task import build_task

SIGMA_F = ("train", "pool", "away")  # where the median posterior std is taken
WITHIN = 1.5  # "matches the paper": ratio in [1/WITHIN, WITHIN]
COLUMNS = (
    "preset", "d", "pool", "n_train", "kernel", "variance", "paper variance",
    "lengthscales", "paper lengthscales", "sigma_eps", "paper sigma_eps",
    "sigma_f train", "sigma_f pool", "sigma_f away", "paper sigma_f",
    "ratio train", "ratio pool", "ratio away",
)  # fmt: skip


def _variances(kernel: list[dict[str, Any]]) -> str:
    return " + ".join(f"{c['variance']:.3g}" for c in kernel)


def _lengthscales(kernel: list[dict[str, Any]]) -> str:
    parts = []
    for c in kernel:
        ls = c.get("lengthscale", c.get("ls"))
        if ls is None:
            continue
        ls = np.atleast_1d(ls)
        parts.append(f"[{ls.min():.3g}, {ls.max():.3g}]")
    return " ; ".join(parts) or "-"


def sigma_f_medians(post_var: np.ndarray, train_idx: np.ndarray) -> dict[str, float]:
    """Median posterior std of f three ways: at the training inputs, over the pool, away.

    The posterior std is bimodal (about sigma_eps at the training inputs, much larger
    away from them), so its pool median flips with n/N. ``post_var`` is (N,),
    ``train_idx`` (n,) indices into the pool (may repeat); "away" is every pool point that
    is not a training input.
    """
    sd = np.sqrt(post_var)
    away = np.ones(sd.shape[0], dtype=bool)
    away[train_idx] = False
    return {
        "train": float(np.median(sd[np.unique(train_idx)])),
        "pool": float(np.median(sd)),
        "away": float(np.median(sd[away])) if away.any() else float("nan"),
    }


def preset_row(preset: Preset | str, seed: int = 0, data_dir: str | Path | None = None) -> dict:
    """One row of the comparison table: our fitted values and seed-``seed`` medians vs paper.

    sigma_eps is the pool median of the noise std; sigma_f the median posterior std of f
    taken three ways (:func:`sigma_f_medians`); all in original target units. The ratios
    are ours over the paper's ``median_sigma_f``.
    """
    p = preset if isinstance(preset, Preset) else load_preset(preset)
    task = build_task(p, seed, data_dir=data_dir)
    paper = p.paper
    sigma_f = sigma_f_medians(task.post_var, task.train_idx)
    ref = paper.get("median_sigma_f")
    return {
        "preset": p.name,
        "d": p.d,
        "pool": p.pool_size,
        "n_train": p.n_train,
        "kernel": " + ".join(c["type"] for c in p.kernel),
        "variance": _variances(list(p.kernel)),
        "paper variance": _variances(paper.get("kernel", [])) if paper.get("kernel") else "-",
        "lengthscales": _lengthscales(list(p.kernel)),
        "paper lengthscales": _lengthscales(paper.get("kernel", [])),
        "sigma_eps": f"{np.median(np.sqrt(task.noise_var)):.4g}",
        "paper sigma_eps": f"{paper.get('aleatoric_std', float('nan')):.4g}",
        **{f"sigma_f {k}": f"{v:.4g}" for k, v in sigma_f.items()},
        "paper sigma_f": f"{ref:.4g}" if ref else "-",
        **{f"ratio {k}": f"{v / ref:.2f}" if ref else "-" for k, v in sigma_f.items()},
    }


def within_counts(rows: list[dict]) -> dict[str, int]:
    """Per sigma_f definition, how many rows lie within a factor :data:`WITHIN` of the paper."""
    counts = {}
    for k in SIGMA_F:
        ratios = [float(r[f"ratio {k}"]) for r in rows if r[f"ratio {k}"] != "-"]
        counts[k] = sum(1 / WITHIN <= x <= WITHIN for x in ratios)
    return counts


def markdown_table(rows: list[dict]) -> str:
    """A GitHub-markdown table of :func:`preset_row` rows."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(str(r[c]) for c in COLUMNS) + " |" for r in rows]
    counts = within_counts(rows)
    lines += ["", f"Within x{WITHIN} of the paper's sigma_f, of {len(rows)} presets: "
              + ", ".join(f"{counts[k]} ({k})" for k in SIGMA_F) + "."]  # fmt: skip
    return "\n".join(lines) + "\n"
