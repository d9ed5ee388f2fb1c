"""Ours-vs-paper summaries of presets (``udora presets show``, docs/presets.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from udora.oracle.preset import Preset, load_preset
from udora.oracle.task import build_task

COLUMNS = (
    "preset", "d", "pool", "n_train", "kernel", "variance", "paper variance",
    "lengthscales", "paper lengthscales", "sigma_eps", "paper sigma_eps",
    "sigma_f", "paper sigma_f", "sigma_f ratio",
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


def preset_row(preset: Preset | str, seed: int = 0, data_dir: str | Path | None = None) -> dict:
    """One row of the comparison table: our fitted values and seed-``seed`` medians vs paper.

    sigma_eps and sigma_f are pool medians of the noise std and the posterior std of f,
    in original target units.
    """
    p = preset if isinstance(preset, Preset) else load_preset(preset)
    task = build_task(p, seed, data_dir=data_dir)
    paper = p.paper
    sigma_f = float(np.median(np.sqrt(task.post_var)))
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
        "sigma_f": f"{sigma_f:.4g}",
        "paper sigma_f": f"{paper.get('median_sigma_f', float('nan')):.4g}",
        "sigma_f ratio": f"{sigma_f / paper['median_sigma_f']:.2f}" if paper else "-",
    }


def markdown_table(rows: list[dict]) -> str:
    """A GitHub-markdown table of :func:`preset_row` rows."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(str(r[c]) for c in COLUMNS) + " |" for r in rows]
    return "\n".join(lines) + "\n"
