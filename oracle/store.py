"""Write and read an oracle task as ``oracle.npz`` + ``oracle.json`` (names are a contract).

``oracle.npz``: ``X`` (N, d), ``train_idx`` (n,), ``y_train`` (n,), ``f``, ``y``,
``noise_var``, ``post_mean``, ``post_var`` (N,), all original units.
``oracle.json``: ``preset``, ``seed``, ``x_mean`` (d), ``x_sd`` (d), ``y_mean``, ``y_sd``,
``kernel`` (standardised component list), ``mean``, ``noise``, ``bin_counts`` (5),
``n_unique_train``, ``jitter``, ``joint_sampling`` and further diagnostics.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from udora.errors import UserError
from udora.oracle.atomic import write_json, write_npz
from udora.oracle.files import ARRAYS
from udora.oracle.task import OracleTask


def save_task(task: OracleTask, out_dir: str | Path) -> Path:
    """Write ``out_dir/oracle.npz`` and ``out_dir/oracle.json`` atomically; returns out_dir."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    arrays = {name: getattr(task, name) for name in ARRAYS}
    write_npz(out / "oracle.npz", arrays)
    info = {"preset": task.preset.name, "seed": task.seed, **task.meta}
    write_json(out / "oracle.json", info, indent=2, allow_nan=True)
    return out


def load_oracle(out_dir: str | Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Read back ``(arrays, info)`` from a folder written by :func:`save_task`."""
    out = Path(out_dir)
    for name in ("oracle.npz", "oracle.json"):
        if not (out / name).is_file():
            raise FileNotFoundError(f"{out / name}: not found (write it with `udora oracle build`)")
    with np.load(out / "oracle.npz") as data:
        arrays = {k: data[k] for k in data.files}
    missing = [k for k in ARRAYS if k not in arrays]
    if missing:
        raise UserError(f"{out / 'oracle.npz'}: missing arrays {missing}")
    return arrays, json.loads((out / "oracle.json").read_text())


def summary(arrays: dict[str, np.ndarray], info: dict[str, Any]) -> dict[str, Any]:
    """n, d, median sigma_eps and median posterior sd sigma_f (original units), bin counts."""
    return {
        "preset": info["preset"],
        "seed": info["seed"],
        "N": int(arrays["X"].shape[0]),
        "d": int(arrays["X"].shape[1]),
        "n": int(arrays["train_idx"].shape[0]),
        "n_unique_train": info["n_unique_train"],
        "median_sigma_eps": float(np.median(np.sqrt(arrays["noise_var"]))),
        "median_sigma_f": float(np.median(np.sqrt(arrays["post_var"]))),
        "bin_counts": info["bin_counts"],
        "jitter": info["jitter"],
        "joint_sampling": info["joint_sampling"],
    }
