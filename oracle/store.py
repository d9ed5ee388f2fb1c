"""Write and read an oracle task as ``oracle.npz`` + ``oracle.json`` (names are a contract).

``oracle.npz`` holds the arrays of the task's kind (:class:`~udora.oracle.kinds.TaskKind`
``shapes``); for regression ``X`` (N, d), ``train_idx`` (n,), ``y_train`` (n,), ``f``,
``y``, ``noise_var``, ``post_mean``, ``post_var`` (N,), all original units.
``oracle.json``: ``kind`` (absent in folders written before kinds: regression),
``preset``, ``seed``, and the task's meta; for regression ``x_mean`` (d), ``x_sd`` (d),
``y_mean``, ``y_sd``, ``kernel`` (standardised component list), ``mean``, ``noise``,
``bin_counts`` (5), ``n_unique_train``, ``jitter``, ``joint_sampling`` and further
diagnostics.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from udora.errors import UserError
from udora.oracle import reading
from udora.oracle.atomic import write_json, write_npz
from udora.oracle.files import ARRAYS, SHAPES
from udora.oracle.kinds import DEFAULT_KIND, REGRESSION, get_kind


def save_task(task: Any, out_dir: str | Path) -> Path:
    """Write ``out_dir/oracle.npz`` and ``out_dir/oracle.json`` atomically; returns out_dir.

    ``task``: a task of any kind (the arrays are its ``to_arrays()``; a regression
    :class:`~udora.oracle.task.OracleTask` gives :data:`~udora.oracle.files.ARRAYS`)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    kind = task.preset.kind
    if kind == REGRESSION:
        arrays = {name: getattr(task, name) for name in ARRAYS}
    else:
        arrays = task.to_arrays()
    write_npz(out / "oracle.npz", arrays)
    info = {"kind": kind, "preset": task.preset.name, "seed": task.seed, **task.meta}
    write_json(out / "oracle.json", info, indent=2, allow_nan=True)
    return out


COMMON_FIELDS = {
    "preset": ((str,), "a string"),
    "seed": ((int,), "an integer"),
    "n_unique_train": ((int,), "an integer"),
    "bin_counts": ((list,), "a list"),
}
"""The fields of ``oracle.json`` every kind writes, their types."""
INFO_FIELDS = {
    **COMMON_FIELDS,
    "jitter": ((int, float), "a number"),
    "joint_sampling": ((bool,), "true or false"),
}
"""The fields of ``oracle.json`` that :func:`summary` shows, their types."""


def load_oracle(out_dir: str | Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Read back ``(arrays, info)`` from a folder written by :func:`save_task`; a file that
    is missing, damaged or not of these shapes and fields is one error naming it."""
    out = Path(out_dir)
    for name in ("oracle.npz", "oracle.json"):
        if not (out / name).is_file():
            raise FileNotFoundError(f"{out / name}: not found (write it with `udora oracle build`)")
    info = reading.json_object(out / "oracle.json")
    try:
        kind = get_kind(info.get("kind", DEFAULT_KIND))
    except ValueError as err:
        raise UserError(f"{out / 'oracle.json'}: field 'kind': {err}") from None
    shapes = SHAPES if kind.name == REGRESSION else (kind.shapes or {})
    arrays = reading.arrays(out / "oracle.npz", tuple(shapes))
    sizes = reading.shaped(out / "oracle.npz", arrays, shapes)
    rows = arrays["train_idx"]
    if rows.dtype.kind not in "iu" or ((rows < 0) | (rows >= sizes["N"])).any():
        raise UserError(f"{out / 'oracle.npz'}: 'train_idx' must be pool rows 0..{sizes['N'] - 1}")
    fields = INFO_FIELDS if kind.name == REGRESSION else COMMON_FIELDS
    for key, (kinds, expected) in fields.items():
        value = info.get(key)
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            raise UserError(
                f"{out / 'oracle.json'}: field {key!r} is {reading.kind_of(value)}, "
                f"expected {expected}"
            )
    return arrays, info


def summary(arrays: dict[str, np.ndarray], info: dict[str, Any]) -> dict[str, Any]:
    """What ``oracle show`` prints: for regression n, d, median sigma_eps and median
    posterior sd sigma_f (original units), bin counts; another kind's own summary."""
    kind = get_kind(info.get("kind", DEFAULT_KIND))
    if kind.name != REGRESSION and kind.summary is not None:
        return kind.summary(arrays, info)
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
