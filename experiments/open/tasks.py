"""Tasks as a method outside udora sees them: the training sample and the pool to predict
on, never an oracle array or a pool outcome (docs/evaluate_any_model.md).

:func:`load_task` builds one in memory; :func:`export_task` writes it as files (``.npz``,
``.csv``, ``.parquet`` and ``task.json``) for a method in another language or process;
:func:`read_task` reads such a folder back. The task hash is the one a built-in run of the
same preset, seed and data records (:func:`udora.experiments.run.spec.task_hash`), so an
external run and a built-in one are matched by it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from udora.errors import UserError
from udora.experiments.run.spec import data_source_record, task_hash, task_part
from udora.names import check_name
from udora.oracle import reading
from udora.oracle.atomic import write_npz, write_parquet, write_text
from udora.oracle.files import file_checksum
from udora.oracle.joint import DESIGNS
from udora.oracle.joint import VERSION as JOINT_VERSION
from udora.oracle.preset import load_preset
from udora.scoring.declaration import Need

FORMAT = 1  # of task.json
# The prediction forms a scorer accepts: required fields (npz keys; csv columns below).
FORMS: dict[str, dict[str, str]] = {
    "split": {"mean": "(N,)", "aleatoric": "(N,) variance", "epistemic": "(N,) variance"},
    "members": {"member_means": "(K, N)", "member_variances": "(K, N) variances"},
    "draws": {"latent_draws": "(S, N) draws of the latent mean", "aleatoric": "(N,) variance"},
    "gaussian": {"mean": "(N,)", "variance": "(N,) total variance"},
    "samples": {"samples": "(S, N) draws of the predictive"},
    "quantiles": {"quantiles": "(L, N)", "quantile_levels": "(L,) in (0, 1), increasing"},
}
IDS = ("row_id", "task_hash")  # the fields that say which pool a prediction is on
# The forms of a classification task's predictions (C classes, in the preset's order).
CLASSIFICATION_FORMS: dict[str, dict[str, str]] = {
    "split": {
        "prob": "(N, C) class probabilities",
        "aleatoric": "(N,) nats",
        "epistemic": "(N,) nats",
    },
    "members": {"member_probs": "(K, N, C) each member's class probabilities"},
    "samples": {"prob_samples": "(S, N, C) posterior samples of the class probabilities"},
    "probs": {"prob": "(N, C) class probabilities"},
}
# The total-only forms of each task kind (no AU/EU split: fewer metrics) and what each
# supplies of a predictive (the needs of :mod:`udora.scoring.registry`): a regression
# Gaussian; samples, whose variance is a squared error's; quantiles, whose spread orders
# the points; class probabilities, which are the whole predictive of a label. Every form
# also has the oracle's targets and the realised outcomes; a form not listed has the split.
TOTAL_ONLY: dict[str, dict[str, frozenset[Need]]] = {
    "regression": {
        "gaussian": frozenset({"mean", "total_order", "total", "gaussian"}),
        "samples": frozenset({"mean", "total_order", "total"}),
        "quantiles": frozenset({"mean", "total_order"}),
    },
    "classification": {"probs": frozenset({"mean", "total_order", "total", "gaussian"})},
}
_RULES = {
    "regression": "variances >= 0; finite values",
    "classification": (
        "probabilities in [0, 1], each point's summing to 1 within 1e-6; aleatoric and "
        "epistemic in nats, >= 0; finite values"
    ),
}


def forms_for(kind: str) -> dict[str, dict[str, str]]:
    """The prediction forms of a task kind."""
    return CLASSIFICATION_FORMS if kind == "classification" else FORMS


@dataclass(frozen=True)
class PublicTask:
    """What a method may see of a task. Shapes: ``X_train`` (n, d), ``y_train`` (n,),
    ``X_pool`` (N, d), ``train_rows`` (n,) the pool rows the training inputs are (they may
    repeat); ``row_id`` of pool row i is i. Predictions cover the whole pool, training
    rows included, in this row order."""

    preset: str
    seed: int
    task_hash: str
    data_kind: str | None  # where the table came from: file, package or openml
    data_sha256: str | None
    feature_names: tuple[str, ...]
    X_train: np.ndarray
    y_train: np.ndarray
    X_pool: np.ndarray
    train_rows: np.ndarray
    preset_config: dict[str, Any]
    # a regression task's joint batches (udora.oracle.joint): pool rows (B, tau), designs (B,)
    joint_idx: np.ndarray | None = None
    joint_design: np.ndarray | None = None

    @property
    def n_pool(self) -> int:
        return int(self.X_pool.shape[0])

    @property
    def kind(self) -> str:
        """The task kind (``regression`` or ``classification``)."""
        return str(self.preset_config.get("kind", "regression"))

    @property
    def classes(self) -> tuple[str, ...]:
        """A classification task's class names (label ``c`` is ``classes[c]``); ()."""
        return tuple(self.preset_config.get("classes", ()))

    def source(self) -> dict[str, str] | None:
        """The data source's kind and checksum, as a run's identity holds them."""
        if self.data_sha256 is None:
            return None
        return {"kind": str(self.data_kind), "sha256": self.data_sha256}

    def manifest(self) -> dict[str, Any]:
        """``task.json``'s content: identity, shapes and the accepted prediction forms."""
        return {
            "format": FORMAT,
            "preset": self.preset,
            "seed": self.seed,
            "task_hash": self.task_hash,
            "data_kind": self.data_kind,
            "data_sha256": self.data_sha256,
            "feature_names": list(self.feature_names),
            "shapes": {
                "X_train": list(self.X_train.shape),
                "y_train": [len(self.y_train)],
                "X_pool": list(self.X_pool.shape),
            },
            "kind": self.kind,
            **({"classes": list(self.classes)} if self.classes else {}),
            "prediction_forms": forms_for(self.kind),
            **(
                {}
                if self.joint_idx is None
                else {
                    "joint": {
                        "file": "joint.npz",
                        "designs": list(DESIGNS),
                        "version": JOINT_VERSION,
                        "batches": list(self.joint_idx.shape),
                        "prediction_field": (
                            "joint_epistemic (B, tau, tau), optional with the split form "
                            "(.npz only): the epistemic covariance at each batch of pool rows "
                            "joint_idx, its diagonal the epistemic field at those rows"
                        ),
                    }
                }
            ),
            "prediction_rules": (
                "one row per pool row; say which pool: a 'row_id' field (0..N-1, any order) "
                f"or a 'task_hash' field equal to this one; {_RULES[self.kind]}"
            ),
            "preset_config": self.preset_config,
        }


def load_task(preset: Any, seed: int, data_dir: str | Path | None = None) -> PublicTask:
    """The public part of ``preset``'s task at ``seed`` (a shipped name, a YAML path or a
    preset of any kind); ``data_dir`` as for ``udora run``. Draws the training sample as
    the task's builder does (a regression task is built whole, and scoring it reuses it;
    a classification task's sampled oracle is not needed to export it:
    :func:`udora.experiments.run.execute.training_sample`) and keeps only what a method
    may see."""
    from udora.experiments.run.execute import training_sample

    preset = load_preset(preset) if isinstance(preset, str | Path) else preset
    source = data_source_record(preset, data_dir, missing_ok=False)
    task = training_sample(preset, int(seed), data_dir)
    batches = getattr(task, "joint", None)  # a regression task's; classification has none
    return PublicTask(
        preset=preset.name,
        seed=int(seed),
        task_hash=task_hash({"task": task_part(preset, source)}, int(seed)),
        data_kind=(source or {}).get("kind"),
        data_sha256=(source or {}).get("sha256"),
        feature_names=tuple(preset.features),
        X_train=np.array(task.X_train),
        y_train=np.array(task.y_train),
        X_pool=np.array(task.X),
        train_rows=np.array(task.train_idx),
        preset_config=preset.model_dump(mode="json", exclude={"paper"}),
        joint_idx=None if batches is None else batches.idx,
        joint_design=None if batches is None else batches.design,
    )


def export_task(task: PublicTask, folder: str | Path) -> list[Path]:
    """Write ``task`` under ``folder``: ``train.npz``/``pool.npz`` (``X``, ``y``;
    ``X``, ``row_id``), the same as ``.csv`` and ``.parquet`` (feature columns, ``target``
    or ``row_id``) and ``task.json`` (:meth:`PublicTask.manifest` and the SHA-256 of every
    other file, which :func:`read_task` checks). Returns the files."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    names = list(task.feature_names)
    row_id = np.arange(task.n_pool)
    train = pd.DataFrame(task.X_train, columns=names).assign(target=task.y_train)
    pool = pd.DataFrame(task.X_pool, columns=names)
    pool.insert(0, "row_id", row_id)
    written = [folder / "train.npz", folder / "pool.npz"]
    write_npz(written[0], {"X": task.X_train, "y": task.y_train, "rows": task.train_rows})
    write_npz(written[1], {"X": task.X_pool, "row_id": row_id})
    if task.joint_idx is not None:
        written.append(folder / "joint.npz")
        write_npz(written[-1], {"joint_idx": task.joint_idx, "joint_design": task.joint_design})
    for frame, stem in ((train, "train"), (pool, "pool")):
        write_text(folder / f"{stem}.csv", frame.to_csv(index=False, float_format="%.17g"))
        write_parquet(folder / f"{stem}.parquet", frame)
        written += [folder / f"{stem}.csv", folder / f"{stem}.parquet"]
    files = {path.name: file_checksum(path) for path in written}  # task.json names them
    write_text(folder / "task.json", json.dumps({**task.manifest(), "files": files}, indent=1))
    return [*written, folder / "task.json"]


TASK_FIELDS = {
    "preset": ((str,), "a string"),
    "seed": ((int,), "an integer"),
    "task_hash": ((str,), "a string"),
    "data_kind": ((str, type(None)), "a string or null"),
    "data_sha256": ((str, type(None)), "a string or null"),
    "feature_names": ((list,), "a list of names"),
    "preset_config": ((dict,), "a mapping"),
    "shapes": ((dict,), "a mapping"),
}
"""The fields of ``task.json`` that :func:`read_task` reads, their types."""


def read_task(folder: str | Path) -> PublicTask:
    """The task exported under ``folder``; a missing or damaged file is one UserError
    naming it (and the field or array)."""
    folder = Path(folder)
    path = folder / "task.json"
    if not path.is_file():
        raise UserError(f"{folder}: not a task folder of `udora export` (no task.json)")
    info = reading.json_object(path)
    for key, (kinds, expected) in TASK_FIELDS.items():
        value = info.get(key)
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            raise UserError(
                f"{path}: field {key!r} is {reading.kind_of(value)}, expected {expected}"
            )
    _check_files(path, info.get("files"))  # a changed file is named before it is parsed
    train = reading.arrays(folder / "train.npz", ("X", "y", "rows"))
    pool = reading.arrays(folder / "pool.npz", ("X",))
    reading.shaped(folder / "train.npz", train, {"X": "n d", "y": "n", "rows": "n"})
    reading.shaped(folder / "pool.npz", pool, {"X": "N d"})
    for file, name, array in (
        ("train.npz", "X_train", train["X"]),
        ("pool.npz", "X_pool", pool["X"]),
    ):
        if list(array.shape) != info["shapes"].get(name):
            raise UserError(
                f"{folder / file}: 'X' has shape {list(array.shape)}, but {path.name} records "
                f"{name} of shape {info['shapes'].get(name)}; export the task again"
            )
    n_pool = pool["X"].shape[0]
    rows = train["rows"]
    if rows.dtype.kind not in "iu" or ((rows < 0) | (rows >= n_pool)).any():
        raise UserError(f"{folder / 'train.npz'}: 'rows' must be pool rows 0..{n_pool - 1}")
    arrays = {"X_train": train["X"], "y_train": train["y"], "X_pool": pool["X"]}
    fields = {k: info[k] for k in ("preset", "seed", "task_hash", "data_kind", "data_sha256")}
    _check_claims(path, info, fields, info["preset_config"], arrays)
    joint: dict[str, Any] = {}
    if (folder / "joint.npz").is_file():
        joint = reading.arrays(folder / "joint.npz", ("joint_idx", "joint_design"))
        reading.shaped(folder / "joint.npz", joint, {"joint_idx": "B t", "joint_design": "B"})
        if (
            joint["joint_idx"].dtype.kind not in "iu"
            or not ((joint["joint_idx"] >= 0) & (joint["joint_idx"] < n_pool)).all()
        ):
            raise UserError(
                f"{folder / 'joint.npz'}: 'joint_idx' must be pool rows 0..{n_pool - 1}"
            )
    return PublicTask(
        **fields,
        feature_names=tuple(info["feature_names"]),
        X_train=arrays["X_train"],
        y_train=arrays["y_train"],
        X_pool=arrays["X_pool"],
        train_rows=rows,
        preset_config=info["preset_config"],
        **joint,
    )


def _check_files(path: Path, files: Any) -> None:
    """Every file ``task.json`` lists under ``files`` has the SHA-256 it records (exports
    before 0.3 list none)."""
    if files is None:
        return
    if not isinstance(files, dict):
        raise UserError(f"{path}: field 'files' is {reading.kind_of(files)}, expected a mapping")
    for name, expected in files.items():
        file = path.parent / check_name(name, f"{path}: file")
        try:
            found = file_checksum(file)
        except OSError as err:
            raise UserError(f"{file}: listed in {path.name} but cannot be read ({err})") from None
        if found != expected:
            raise UserError(
                f"{file}: does not match the SHA-256 in {path.name} (changed after the "
                "export?); export the task again"
            )


def _check_claims(path: Path, info: dict, fields: dict, config: Any, arrays: dict) -> None:
    """A task folder is what its ``task.json`` says: its fields (preset config, data
    record, seed) hash to its ``task_hash`` (a field edited under the original hash would
    score against another oracle), and its arrays have the recorded shapes. Raises a
    UserError naming the file and what disagrees."""
    from udora.oracle.preset import parse_preset

    try:
        preset = parse_preset(config, f"{path}: preset_config")
        kind, sha = fields["data_kind"], fields["data_sha256"]
        source = None if sha is None else {"kind": str(kind), "sha256": str(sha)}
        digest = task_hash({"task": task_part(preset, source)}, int(fields["seed"]))
    except (TypeError, ValueError) as err:
        raise UserError(f"{path}: its fields cannot be read ({err})") from None
    if digest != fields["task_hash"] or preset.name != fields["preset"]:
        raise UserError(
            f"{path}: its preset, data record and seed hash to {digest}, not to its "
            f"task_hash {fields['task_hash']} (edited?); export the task again"
        )
    shapes = info["shapes"]
    found = {
        "X_train": list(arrays["X_train"].shape),
        "y_train": list(arrays["y_train"].shape),
        "X_pool": list(arrays["X_pool"].shape),
    }
    for name, shape in found.items():
        if shapes.get(name) != shape:
            raise UserError(
                f"{path}: records {name} of shape {shapes.get(name)}, but the task's files hold "
                f"{shape}; export the task again"
            )


def pool_order(fields: dict[str, Any], task: PublicTask, where: str) -> np.ndarray | None:
    """Indices that put the file's rows in pool order (None: already in it)."""
    if "row_id" not in fields and "task_hash" not in fields:
        raise UserError(
            f"{where}: must say which pool it predicts: a 'row_id' field "
            f"(0..{task.n_pool - 1}) or 'task_hash' ({task.task_hash})"
        )
    if "task_hash" in fields and fields["task_hash"] != task.task_hash:
        raise UserError(
            f"{where}: field 'task_hash' is {fields['task_hash']!r}, a prediction "
            f"for another task; this task ({task.preset}, seed {task.seed}) is "
            f"{task.task_hash}"
        )
    if "row_id" not in fields:
        return None
    ids = np.asarray(fields["row_id"])
    numbers = ids.dtype.kind in "biuf"
    if ids.ndim != 1 or not numbers or (ids.dtype.kind not in "iu" and np.any(np.mod(ids, 1))):
        raise UserError(f"{where}: field 'row_id' must be integers, one per pool row")
    ids = ids.astype(np.int64)
    if len(ids) != task.n_pool or not np.array_equal(np.sort(ids), np.arange(task.n_pool)):
        raise UserError(
            f"{where}: field 'row_id' must hold each pool row 0..{task.n_pool - 1} "
            f"once; got {len(ids)} rows, {len(np.unique(ids))} distinct"
        )
    return np.argsort(ids)


def find_form(
    fields: dict[str, Any],
    where: str,
    forms: dict[str, dict[str, str]] = FORMS,
    split_optional: frozenset[str] = frozenset({"member_means", "joint_epistemic"}),
    prefer_split: bool = False,
    what: str = "prediction",
) -> str:
    """The one form of ``forms`` whose required fields are all present (``prefer_split``:
    the split when it is one of them, as it holds another form's fields); none or two is
    an error listing the forms, and so is a field outside the form (plus the split's
    ``split_optional`` fields)."""
    present = set(fields) - set(IDS)
    found = [name for name, need in forms.items() if set(need) <= present]
    if prefer_split and "split" in found:
        found = ["split"]
    if len(found) != 1:
        listed = "; ".join(f"{n}: {', '.join(need)}" for n, need in forms.items())
        got = ", ".join(reading.brief(n) for n in sorted(present)[:20]) or "none"
        # fields that together belong to one form lacking some (member_probs and prob: the
        # split's, short of aleatoric and epistemic): name what it lacks
        short = [
            (n, sorted(set(need) - present))
            for n, need in forms.items()
            if len(present) > 1
            and present <= set(need) | (set(split_optional) if n == "split" else set())
            and not set(need) <= present
        ]
        hint = "".join(f"; the {n} form also needs {', '.join(lack)}" for n, lack in short[:1])
        raise UserError(
            f"{where}: expected the fields of one {what} form ({listed}); got {got}{hint}"
        )
    allowed = set(forms[found[0]]) | (set(split_optional) if found[0] == "split" else set())
    extra = sorted(present - allowed)
    if extra:
        # a larger form holding these fields and the extra ones lacks some: name them
        larger = [
            n
            for n, need in forms.items()
            if set(forms[found[0]]) < set(need) and set(extra) & set(need)
        ]
        hint = "".join(
            f"; the {n} form also needs {', '.join(sorted(set(forms[n]) - present))}"
            for n in larger[:1]
        )
        raise UserError(
            f"{where}: field {reading.brief(extra[0])} is not part of the {found[0]} form "
            f"({', '.join(sorted(allowed))}){hint}"
        )
    return found[0]
