"""Ours-vs-paper summaries of presets (``udora presets show``, docs/presets.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from udora.errors import UserError
from udora.oracle.preset import Preset, load_preset
from udora.oracle.task import build_task

SIGMA_F = ("train", "pool", "away")  # where the median posterior std is taken
WITHIN = 1.5  # "matches the paper": ratio in [1/WITHIN, WITHIN]
COLUMNS = (
    "preset",
    "d",
    "pool",
    "n_train",
    "kernel",
    "variance",
    "paper variance",
    "lengthscales",
    "paper lengthscales",
    "sigma_eps",
    "paper sigma_eps",
    "sigma_f train",
    "sigma_f pool",
    "sigma_f away",
    "paper sigma_f",
    "ratio train",
    "ratio pool",
    "ratio away",
)


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
    lines += [
        "",
        f"Within x{WITHIN} of the paper's sigma_f, of {len(rows)} presets: "
        + ", ".join(f"{counts[k]} ({k})" for k in SIGMA_F)
        + ".",
    ]
    return "\n".join(lines) + "\n"


PAPER_COLUMNS = (
    "preset",
    "rows",
    "free mll/pt",
    "paper-constrained mll/pt",
    "paper lengthscales",
    "fitted lengthscales",
    "sigma_f train",
    "sigma_f pool",
    "sigma_f away",
    "paper sigma_f",
    "ratio train free",
    "ratio train",
    "ratio pool",
    "ratio away",
    "command",
)


def paper_variant_row(
    preset: Preset | str, seed: int = 0, data_dir: str | Path | None = None
) -> dict:
    """The paper-constrained variant (``kernel=paper``) of a preset with a ``kernel_paper``
    block next to its free fit: mll per point of both fits, the variant's sigma_f three ways
    (:func:`sigma_f_medians`, seed ``seed``, original units) and its ratios to the paper's,
    plus the free fit's training-input ratio."""
    p = preset if isinstance(preset, Preset) else load_preset(preset)
    if p.kernel_paper is None:
        raise UserError(f"preset {p.name!r} has no kernel_paper block")
    variant = p.with_overrides({"kernel": "paper"})
    ref = p.paper.get("median_sigma_f")
    free = sigma_f_medians(*_post(p, seed, data_dir))
    ours = sigma_f_medians(*_post(variant, seed, data_dir))
    rec = p.fit_paper or {}
    return {
        "preset": p.name,
        "rows": rec.get("subset", "-"),
        "free mll/pt": f"{p.fit['mll_per_point']:.4f}" if p.fit else "-",
        "paper-constrained mll/pt": f"{rec['mll_per_point']:.4f}" if rec else "-",
        "paper lengthscales": _lengthscales(p.paper.get("kernel", [])),
        "fitted lengthscales": _lengthscales(list(variant.kernel)),
        **{f"sigma_f {k}": f"{v:.4g}" for k, v in ours.items()},
        "paper sigma_f": f"{ref:.4g}" if ref else "-",
        "ratio train free": f"{free['train'] / ref:.2f}" if ref else "-",
        **{f"ratio {k}": f"{v / ref:.2f}" if ref else "-" for k, v in ours.items()},
        "command": f"`udora presets fit {p.name} --paper --write`",
    }


def _post(preset: Preset, seed: int, data_dir: str | Path | None):
    task = build_task(preset, seed, data_dir=data_dir)
    return task.post_var, task.train_idx


def paper_markdown_table(rows: list[dict]) -> str:
    """A GitHub-markdown table of :func:`paper_variant_row` rows."""
    lines = ["| " + " | ".join(PAPER_COLUMNS) + " |", "|" + "---|" * len(PAPER_COLUMNS)]
    lines += ["| " + " | ".join(str(r[c]) for c in PAPER_COLUMNS) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def paper_variant_presets() -> list[str]:
    """Shipped presets that carry a ``kernel_paper`` block."""
    from udora.oracle.kinds import REGRESSION
    from udora.oracle.preset import list_presets

    return [n for n in list_presets(kind=REGRESSION) if load_preset(n).kernel_paper is not None]


if __name__ == "__main__":  # python -m udora.experiments.preset_tools.compare [SEED]
    import sys

    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    print(paper_markdown_table([paper_variant_row(n, seed) for n in paper_variant_presets()]))
