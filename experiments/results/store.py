"""Collect run folders into one table (one row per run); the summaries built on it are in
:mod:`udora.experiments.results.summaries`.

Runs are keyed by (preset, method, config): ``config`` is a readable label built from the
run's overrides (``nn_ensemble[width=64]``, the bare method name for a default config), so
every summary averages over seeds of one config only, never over configs
(docs/design.md, "The life of a run", step 8; docs/running.md, "The report").

Each override field is a typed column named by its ``--set`` key (:func:`override_cells`,
:func:`typed_column`): an integer stays an integer where other runs leave the field unset
(``Int64``), no cell holds JSON text.
"""

from __future__ import annotations

import hashlib
import json
import math
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from udora.errors import UserError
from udora.experiments.run.overrides import Overrides
from udora.experiments.run.record import RunRecord
from udora.experiments.run.records import RESULT, RUN_GLOB, read_run, refuse_old
from udora.oracle.kinds import REGRESSION

KEYS = ("preset", "method", "config")  # what a summary row is keyed by; seeds are averaged
BASE_COLUMNS = (
    "preset",
    "suite",
    "method",
    "config",
    "config_hash",
    "seed",
    "status",
    "error",
    "run_dir",
)


class UnreadableRunWarning(UserWarning):
    """A result.json could not be read (truncated, empty, missing keys) and was skipped."""


def _value(v: Any) -> str:
    """One override value as label text: strings bare, everything else as compact JSON."""
    if isinstance(v, str):
        return v
    return json.dumps(v, default=str, separators=(",", ":"))


def config_name(method: str, overrides: dict[str, Any] | None) -> str:
    """The readable label of a config: ``method`` or ``method[k=v,k=v]`` (keys sorted).

    Preset overrides keep their prefix: ``nn_ensemble[preset.n_train=300,width=64]``.
    """
    if not overrides:
        return method
    return f"{method}[{','.join(f'{k}={_value(v)}' for k, v in sorted(overrides.items()))}]"


def override_cells(overrides: Overrides) -> dict[str, Any]:
    """One cell per override field, keyed by its ``--set`` key (``width``,
    ``preset.n_train``, ``method_seed``). A mapping is one cell per entry under dotted keys
    (``preset.truth={family: features, features: 256}`` -> ``preset.truth.family``,
    ``preset.truth.features``, the columns ``--set preset.truth.features=256`` fills too);
    a list is a tuple."""
    cells: dict[str, Any] = {}

    def put(key: str, value: Any) -> None:
        if isinstance(value, Mapping):
            for field, inner in value.items():
                put(f"{key}.{field}", inner)
        else:
            cells[key] = tuple(value) if isinstance(value, list) else value

    for key, value in overrides.flat().items():
        put(key, value)
    return cells


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def typed_column(values: list[Any]) -> pd.Series:
    """The column of one override field, shape (runs,), None where a run leaves it unset:
    ``Int64`` for integers, ``float64`` when a float is among the numbers, ``boolean``,
    ``string``, tuples (a list field) as objects. Values of several kinds (64 and
    ``"wide"``) are a ``string`` column of their label text (:func:`config_name`)."""
    kinds = {type(v) for v in values if not _missing(v)}
    tuples = kinds == {tuple} and all(
        isinstance(x, bool | int | float | str) for v in values if not _missing(v) for x in v
    )
    if kinds and kinds <= {bool}:
        return pd.Series(values, dtype="boolean")
    if kinds and kinds <= {int}:
        return pd.Series(values, dtype="Int64")
    if kinds and kinds <= {int, float}:
        return pd.Series([np.nan if _missing(v) else float(v) for v in values], dtype="float64")
    if kinds and kinds <= {str}:
        return pd.Series(values, dtype="string")
    if not kinds or tuples:
        return pd.Series(values, dtype=object)
    text = [None if _missing(v) else _value(list(v) if isinstance(v, tuple) else v) for v in values]
    return pd.Series(text, dtype="string")


def _label(rec: RunRecord, overrides: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(config label, tuning columns) of a run. The tuning columns, for tuned runs only:
    ``tuning_protocol`` (JSON), ``tuned_file``, ``tuning.objective``, ``tuning.trials``,
    ``tuning.search``.

    A run of ``bench --tuned`` whose method was tuned is ``method@tuned``: its values differ
    per preset by design, and the config it stands for is the tuning protocol (search,
    trials, objective, seed, validation share; docs/running.md, "Hyperparameter sweeps").
    ``--set`` values on top of the tuned ones follow in brackets. Other runs are labelled
    by their overrides (:func:`config_name`).
    """
    if rec.external:  # scored from a predictions file (docs/evaluate_any_model.md)
        return f"{rec.method} (external)", {}
    source = rec.config_source
    if isinstance(source, dict) and "protocol" not in source and source.get("path"):
        source = _read_source(source)
    protocol = source.get("protocol") if isinstance(source, dict) else None
    if not protocol:
        return config_name(rec.method, overrides), {}
    tuned_keys = set(source.get("keys") or ())
    extra = {k: v for k, v in overrides.items() if k not in tuned_keys}
    columns = {
        "tuning_protocol": json.dumps(protocol, sort_keys=True, default=str),
        "tuned_file": source.get("path"),
        **{f"tuning.{k}": v for k, v in protocol.items() if k in ("objective", "trials", "search")},
    }
    return config_name(f"{rec.method}@tuned", extra), columns


def _read_source(source: dict[str, Any]) -> dict[str, Any]:
    """A ``config_source`` recorded with only the tuned file's path and hash (before the
    protocol was recorded): its keys and protocol read from that file, when it is still
    there with the same hash; otherwise the record as it is (an untuned label)."""
    import hashlib

    from udora.experiments.run.spec import tuned_source
    from udora.oracle import reading

    path = Path(source["path"])
    try:
        text = reading.text(path)
        if hashlib.sha256(text.encode()).hexdigest()[:12] != source.get("hash"):
            return source
        data = reading.yaml_value(path, text) or {}
    except (OSError, reading.BadFile):
        return source
    if not isinstance(data, dict):
        return source
    return tuned_source({**data, "path": str(path), "hash": source["hash"]})


def _split_tuning_protocols(frame: pd.DataFrame) -> pd.DataFrame:
    """Tuned runs of one label under different protocols get ``~<hash>`` labels."""
    if "tuning_protocol" not in frame:
        return frame
    tuned = frame["tuning_protocol"].notna()
    counts = frame[tuned].groupby("config")["tuning_protocol"].transform("nunique")
    clash = counts[counts > 1].index
    if len(clash):
        digest = [
            hashlib.sha256(p.encode()).hexdigest()[:6] for p in frame.loc[clash, "tuning_protocol"]
        ]
        suffix = "~" + pd.Series(digest, index=clash)
        frame.loc[clash, "config"] = frame.loc[clash, "config"] + suffix
    return frame


def _split_reused_labels(frame: pd.DataFrame) -> pd.DataFrame:
    """Give runs of one (preset, config) label but different hashes their own config.

    The same overrides can name different configs (a preset YAML edited between runs, a
    changed method default); their labels get ``@<hash>`` so they are never averaged.
    """
    hashes = frame.groupby(["preset", "config"])["config_hash"].transform("nunique")
    clash = hashes > 1
    if clash.any():
        frame.loc[clash, "config"] = (
            frame.loc[clash, "config"] + "@" + frame.loc[clash, "config_hash"].astype(str)
        )
        warnings.warn(
            f"{int(clash.sum())} runs share a config label with runs of another config hash on "
            "the same preset; their labels carry '@<hash>' and they are reported apart",
            UserWarning,
            stacklevel=3,
        )
    return frame


LEGACY = {"kind": REGRESSION, "has_split": True, "n_acquired": 0}
"""The values :func:`load_runs` gives these columns for a record written before its
fields existed (a regression task, a method's own AU/EU split, no acquired points); a
table built before them (an older release's) is read with the same values."""


def load_runs(results_dir: str | Path) -> tuple[pd.DataFrame, dict[tuple, dict]]:
    """(table, curves): one row per run with spec, config label, overrides, timings, metrics.

    The table has :data:`BASE_COLUMNS`, ``kind`` (the task kind; regression for records
    written before kinds), ``external``, ``prediction_form``, ``has_split`` (False for a
    total-only external prediction, whose AU and EU metrics are NaN), ``task_hash``
    (the task's identity: preset fields, data checksum, seed), ``data_sha256``,
    ``data_kind`` (file, package or openml), ``oracle_sha256`` (the stored oracle arrays
    the run was scored on), ``udora_version``, ``source_sha256`` and
    ``commit`` and ``dirty`` (the code, :mod:`udora.experiments.run.provenance`; None in
    records written before udora recorded them), ``cpus`` (the cores the run's process could use),
    ``n_acquired`` (the pool points an active-learning round added to the training sample,
    the preset field ``acquired``; 0 for every other run), ``version.<library>`` (the
    versions of the libraries the run's method declares, as its record holds them),
    ``config_base`` (the label without a ``method_seed`` override,
    which the noise floor groups by), one typed column per override field (``width``,
    ``preset.n_train``, ``method_seed``, ``preset.truth.features``; :func:`override_cells`,
    :func:`typed_column`; empty where a run does not set it; ``override.<key>`` when a key
    would clash with another column), ``time_*``, one column per metric, and
    ``se.<metric>`` for a metric recorded with a Monte Carlo standard error (a kind whose
    targets are sampled). ``curves`` maps (preset, method, config, seed) to the run's
    curve summaries.

    A run folder that :func:`udora.experiments.run.records.read_run` finds unusable
    (result.json truncated, empty, of wrong types, in another run's folder; a listed file
    missing or not matching its checksum) is skipped with an :class:`UnreadableRunWarning`
    naming its result.json and the reason. Raises
    :class:`~udora.experiments.run.records.OldResultsError` when a run was written by udora
    0.1.0 (no ``"schema"``), whose runs this udora does not read, and FileNotFoundError
    naming ``results_dir`` when no run can be read.
    """
    rows, override_rows, run_curves, bad = [], [], [], []
    override_keys: dict[str, str] = {}  # override key -> column name
    folders = sorted(p for p in Path(results_dir).glob(RUN_GLOB) if p.is_dir())
    for path in (folder / RESULT for folder in folders):  # a folder without one is skipped
        found = read_run(path.parent)
        refuse_old(Path(results_dir), found)
        if not found.usable:
            bad.append(f"{path}: {found.problem}")
            warnings.warn(f"skipped {bad[-1]}", UnreadableRunWarning, stacklevel=2)
            continue
        rec = found.record
        given = Overrides.from_flat(rec.overrides)
        label, tuning = _label(rec, given.flat())
        seeded = given.method_seed is not None
        base = _label(rec, given.without_seed().flat())[0] if seeded else label
        row = {
            "preset": rec.preset,
            "suite": str(rec.preset_config.get("suite") or ""),
            "method": rec.method,
            "config": label,
            "config_hash": rec.config_hash,
            "seed": rec.seed,
            "status": rec.status,
            "error": rec.error,
            "run_dir": str(path.parent),
            "kind": rec.kind,
            "external": rec.external is not None,
            "prediction_form": rec.external.form if rec.external else "split",
            "has_split": rec.external.split if rec.external else True,
            "config_base": base,
            "task_hash": rec.task_hash,
            "data_sha256": (rec.data_source or {}).get("sha256"),
            "data_kind": (rec.data_source or {}).get("kind"),
            "oracle_sha256": rec.oracle_sha256,
            "udora_version": rec.versions.get("udora"),
            "source_sha256": rec.code.source_sha256 if rec.code else None,
            "commit": rec.code.commit if rec.code else None,
            "dirty": rec.code.dirty if rec.code else None,
            "cpus": rec.compute.cpus if rec.compute else None,
            "n_acquired": len(rec.preset_config.get("acquired") or ()),
            **{f"version.{k}": v for k, v in sorted(rec.versions.items()) if k != "udora"},
            **tuning,
        }
        cells = {}
        for key, value in override_cells(given).items():
            column = override_keys.setdefault(
                key, f"override.{key}" if key in BASE_COLUMNS else key
            )
            cells[column] = value
        override_rows.append(cells)
        row.update({f"time_{k}": v for k, v in rec.timings.items()})
        row.update({k: (np.nan if v is None else v) for k, v in rec.metrics.items()})
        row.update(
            {f"se.{k}": np.nan if v is None else v for k, v in (rec.metrics_se or {}).items()}
        )
        rows.append(row)
        run_curves.append(rec.curves)
    if not rows:
        first = "the first: " if len(bad) > 1 else ""
        unread = f"; {len(bad)} unreadable result.json skipped ({first}{bad[0]})" if bad else ""
        raise FileNotFoundError(f"{results_dir}: no readable run folders ({RUN_GLOB}){unread}")
    frame = pd.DataFrame(rows)
    columns = list(override_keys.values())
    for column in columns:  # typed from the values as recorded (an int stays an int)
        frame[column] = typed_column([cells.get(column) for cells in override_rows])
    frame = _split_tuning_protocols(frame)
    frame = _split_reused_labels(frame)
    rest = [c for c in frame.columns if c not in BASE_COLUMNS and c not in columns]
    frame = frame[[*BASE_COLUMNS, *sorted(columns), *rest]]
    curves = {
        (r.preset, r.method, r.config, r.seed): c
        for r, c in zip(frame.itertuples(index=False), run_curves, strict=True)
    }
    return frame, curves


def method_seed_variants(table: pd.DataFrame) -> set[str]:
    """The configs of runs with a ``--set method_seed`` override (``config`` is not its
    ``config_base``; in a table without ``config_base``, such as a baseline table written
    by hand, a row with a ``method_seed``): a config's replicates at other fit seeds (the
    noise floor, :mod:`udora.experiments.rankings.noise`), never a config of their own in
    a ranking."""
    if "config_base" in table:
        return set(table.loc[table["config"] != table["config_base"], "config"])
    if "method_seed" in table:
        return set(table.loc[table["method_seed"].notna(), "config"])
    return set()


def kind_of(table: pd.DataFrame) -> str:
    """The one task kind of ``table``'s runs (regression without a ``kind`` column or for
    rows written before kinds); runs of several kinds are a UserError (their metrics
    differ: rank, pool or page them one kind at a time)."""
    if "kind" not in table.columns or table.empty:
        return REGRESSION
    kinds = sorted(set(table["kind"].fillna(REGRESSION)))
    if len(kinds) > 1:
        raise UserError(
            f"the runs are of {' and '.join(kinds)} tasks, whose metrics differ: give one "
            "kind's results"
        )
    return kinds[0]


def of_kind(table: pd.DataFrame, kind: str) -> pd.DataFrame:
    """The rows of ``table`` whose task kind is ``kind`` (a table without a ``kind``
    column, such as a release table written before kinds, or a row without one, is
    regression)."""
    if "kind" not in table.columns:
        return table if kind == REGRESSION else table.iloc[:0]
    return table[table["kind"].fillna(REGRESSION) == kind]
