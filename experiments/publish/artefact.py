"""The release artefact on disk: build it from results folders, read it back checked.

A release folder holds

- ``results.parquet``: one row per run, as :func:`udora.experiments.results.store.
  load_runs` reads it (every metric, the config label and hash, the override and tuned
  columns, ``task_hash``, ``data_sha256``, ``udora_version``, the code's ``commit`` and
  ``source_sha256`` and the run's ``cpus``) plus ``run`` (the run's folder relative to its
  results root, instead of a machine path), sorted by preset, method, config and seed;
- ``curves.json.gz``: each run's curve summaries (calibration, risk-coverage, PIT), keyed
  like the rows, for the report's figures;
- ``meta_by_size.csv`` (a classification release built from parts that carry one): the
  meta-evaluation's taus by number of evaluation points, which rescore each run's stored
  class probabilities and so are computed from the run folders (:func:`part_by_size`);
- ``manifest.json``: what was built from what (folder names, never paths), counts, the
  failed runs with their errors, the commits, source hashes, cores per run and versions
  of the methods' declared libraries the rows recorded, and the SHA-256 of both files.

:func:`read_release` refuses a folder whose files do not match the manifest's checksums,
so a release table nobody rebuilt cannot be read as one.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from udora.errors import UserError
from udora.experiments.results.store import load_runs
from udora.names import check_name
from udora.oracle import reading
from udora.oracle.atomic import write_bytes, write_parquet

MANIFEST, TABLE, CURVES = "manifest.json", "results.parquet", "curves.json.gz"
BY_SIZE = "meta_by_size.csv"  # a part's or release's by-size meta rows (kind_sizes)
SHIPPED = "release"  # the name that means the release shipped in ``udora.release``
CLASSIFICATION = "classification"  # a release's subfolder holding its classification release
ROW = ("preset", "method", "config", "seed", "status")  # what names a row of a release
NEEDED = (*ROW, "task_hash")  # of a baseline, matched by task hash


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build_release(
    results: list[str | Path],
    out: str | Path,
    commit: str | None = None,
    base: str | Path | None = None,
) -> Path:
    """Write the release folder ``out`` from the results folders ``results``; returns the
    manifest's path. An entry of ``results`` that is a release folder (a part, built by
    this function from runs made apart, as a protocol run over several machines builds
    one per preset) contributes its rows and curves as they are, checked against its
    manifest first; the manifest's ``parts`` names each part's files and SHA-256. Each
    row's ``commit`` and ``source_sha256`` are those its result.json recorded
    (:mod:`udora.experiments.run.provenance`), and the manifest lists every commit;
    ``commit`` (a SHA or its prefix) fills the rows whose record has none (runs
    of an installed wheel) and must agree with those that have one.

    ``base``: a release folder (or ``"release"``, the shipped one) whose rows of every
    method ``results`` does not run are kept with their curves (checked against its
    manifest first): a new version of it in which the methods of ``results`` are rerun.
    The manifest's ``version`` is then the base's plus one, and ``base`` records the
    base's version, files and the methods replaced.

    Raises ValueError when a run appears twice (same preset, config, seed and data kind), a
    run has no task hash (written before task hashes were recorded), or a recorded commit
    is not ``commit``. Runs of a checkout with uncommitted changes are counted in the
    manifest's ``dirty_runs``, which the pages show."""
    tables, oracles, built_from, parts, by_size = [], {}, [], {}, {}
    for folder in results:
        if release_folder(folder) is not None:  # a release part: its checked rows as they are
            part, manifest = _release_rows(folder)
            tables.append(part)
            by_size[str(folder)] = part_by_size(folder, part)
            _add_oracles(oracles, manifest.get("oracles", {}), folder)
            name = Path(folder).name
            if name in parts:
                raise UserError(f"{folder}: two parts named {name!r}; give parts distinct names")
            built_from += [f"{name}:{b}" for b in manifest.get("built_from", [])]
            parts[name] = manifest["files"]
            if by_size[str(folder)] is not None:  # checksummed here: its manifest predates it
                parts[name] = {**parts[name], BY_SIZE: _sha256(Path(folder) / BY_SIZE)}
            continue
        built_from.append(Path(folder).name)
        by_size[str(folder)] = None  # a results folder's runs: no by-size rows carried
        table, found = load_runs(folder)
        root = Path(folder).resolve()
        _add_oracles(oracles, _sampled_oracles(root, table), folder)
        table["run"] = [str(Path(d).resolve().relative_to(root)) for d in table["run_dir"]]
        keys = table[["preset", "method", "config", "seed"]].itertuples(index=False, name=None)
        table["_curves"] = [found.get(key, {}) for key in keys]  # each row its own run's
        tables.append(table.drop(columns="run_dir"))
    based = None
    if base is not None:
        kept, based, old_oracles = _base_rows(base, set(pd.concat(tables)["method"]))
        tables.insert(0, kept)
        kept_oracles = {h: o for h, o in old_oracles.items() if h in set(kept["task_hash"])}
        oracles = _add_oracles(kept_oracles, oracles, base)
    table = pd.concat(tables, ignore_index=True)
    _check_oracles(table, oracles)
    sizes = _joined_by_size(by_size)
    if base is not None and (sizes is not None or BY_SIZE in _listed(base)):
        raise UserError(
            f"{base}: a new version of a release with by-size meta rows would mix the "
            f"base's rows with the rerun's; build it from parts of every preset instead"
        )
    from udora.experiments.results.store import kind_of

    kind_of(table)  # a release holds one task kind (its page ranks one kind's metrics)
    kind = table["data_kind"].fillna("") if "data_kind" in table else ""
    twice = table[table.assign(_k=kind).duplicated(["preset", "config", "seed", "_k"], keep=False)]
    if not twice.empty:
        r = twice.iloc[0]
        raise UserError(
            f"{r.preset} {r.config} seed {r.seed}: more than one run (in one "
            "folder or several); build a release from distinct runs"
        )
    if table["task_hash"].isna().any():
        r = table[table["task_hash"].isna()].iloc[0]
        raise UserError(f"{r.run}: no task hash in its result.json; rerun it with this udora")
    if "commit" not in table:
        table["commit"] = None
    dirty = table["dirty"].map(lambda v: v is True) if "dirty" in table else None
    if commit is not None:
        recorded = table["commit"].dropna().astype(str)
        other = recorded[~recorded.str.startswith(commit)]
        if not other.empty:
            r = table.loc[other.index[0]]
            raise UserError(f"{r.run}: ran commit {r.commit}, not {commit}")
        full = recorded.iloc[0] if len(recorded) else commit  # a prefix names the full SHA
        table["commit"] = table["commit"].fillna(full)
    if "tuned_file" in table:  # where the release ships the config, never a machine path
        table["tuned_file"] = [
            _shipped_tuned(v, r.preset, r.method)
            for v, r in zip(table["tuned_file"], table.itertuples(index=False), strict=True)
        ]
    table = table.sort_values(["preset", "method", "config", "seed"], kind="stable")
    table = table.reset_index(drop=True)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_parquet(out / TABLE, table.drop(columns="_curves"))
    keyed = [
        {"key": [r.preset, r.method, r.config, int(r.seed)], "run": r.run, "curves": c}
        for r, c in zip(table.itertuples(index=False), table["_curves"], strict=True)
    ]
    table = table.drop(columns="_curves")
    blob = json.dumps(keyed, separators=(",", ":"), allow_nan=True).encode()
    write_bytes(out / CURVES, gzip.compress(blob, mtime=0))
    files = {TABLE: _sha256(out / TABLE), CURVES: _sha256(out / CURVES)}
    if sizes is not None:
        write_bytes(out / BY_SIZE, sizes.to_csv(index=False).encode())
        files[BY_SIZE] = _sha256(out / BY_SIZE)
    else:
        (out / BY_SIZE).unlink(missing_ok=True)  # an earlier build's, not this table's
    failed = table[table["status"] != "ok"]
    manifest = {
        "commit": sorted(table["commit"].dropna().unique().tolist()),
        "source_sha256": sorted(table["source_sha256"].dropna().unique().tolist())
        if "source_sha256" in table
        else [],
        "cpus": sorted(int(c) for c in table["cpus"].dropna().unique()) if "cpus" in table else [],
        # runs of a checkout with uncommitted changes to udora's sources: their commit is
        # not all of the code they ran (the pages say so)
        "dirty_runs": int(dirty.sum()) if dirty is not None else 0,
        "udora_version": sorted(table["udora_version"].dropna().unique().tolist()),
        # the versions of the methods' declared libraries the rows recorded
        "libraries": {
            c.removeprefix("version."): sorted(table[c].dropna().unique().tolist())
            for c in sorted(table.columns)
            if c.startswith("version.")
        },
        "built_from": [*(based or {}).get("built_from", []), *built_from],
        "runs": len(table),
        "ok": int((table["status"] == "ok").sum()),
        "failed": [
            {"preset": r.preset, "config": r.config, "seed": int(r.seed), "error": str(r.error)}
            for r in failed.itertuples(index=False)
        ],
        "presets": {s: sorted(g["preset"].unique().tolist()) for s, g in table.groupby("suite")},
        "configs": sorted(table["config"].unique().tolist()),
        "seeds": sorted(int(s) for s in table["seed"].unique()),
        "files": files,
        **({"oracles": dict(sorted(oracles.items()))} if oracles else {}),
        "version": (based or {}).get("version", 0) + 1,
        **({"base": based["record"]} if based else {}),
        **({"parts": parts} if parts else {}),
    }
    write_bytes(out / MANIFEST, (json.dumps(manifest, indent=1) + "\n").encode())
    return out / MANIFEST


TUNED = "tuned"  # a release's folder of the tuned configs its runs read


def _shipped_tuned(recorded: Any, preset: str, method: str) -> Any:
    """A row's ``tuned_file`` in a release: the config's path in the release's own
    ``tuned/`` (``tuned/<preset>/<method>.yaml``, :func:`~udora.experiments.tuning.
    tuned_files.tuned_path`), not the machine path the run recorded; None stays None.
    Raises UserError when the recorded file is not ``<preset>/<method>.yaml`` of a tuned
    folder (``udora tune``'s layout)."""
    from pathlib import PureWindowsPath

    from udora.experiments.tuning.tuned_files import tuned_path

    if pd.isna(recorded):
        return recorded
    shipped = tuned_path(TUNED, preset, method)
    text = str(recorded)  # a Windows path's parts too (it splits on either separator)
    parts = PureWindowsPath(text).parts if "\\" in text else Path(text).parts
    if tuple(parts[-2:]) != shipped.parts[-2:]:
        raise UserError(
            f"{preset} {method}: its run read the tuned config {recorded}, not a "
            f"<preset>/<method>.yaml of a tuned folder (udora tune's layout)"
        )
    return shipped.as_posix()


def released_tuned_files(release: Path, table: pd.DataFrame) -> list[Any]:
    """Where a release's rows' tuned configs lie on this machine: ``release/tuned/<preset>/
    <method>.yaml`` for each row of ``table`` (n rows, columns ``preset``, ``method``,
    ``tuned_file``), None where the row read none. A release built before its rows named
    the shipped path (the regression releases 1 and 2) recorded the path on the machine
    that ran it; it names the same ``<preset>/<method>.yaml`` of the tuned folder whose
    configs the release ships, so it reads the shipped one too. A recorded path outside
    that layout stays as recorded (the report then says it cannot read it)."""

    def shipped(recorded: Any, preset: str, method: str) -> Any:
        if pd.isna(recorded):
            return recorded
        try:
            return str(release / _shipped_tuned(recorded, preset, method))
        except UserError:
            return recorded

    return [
        shipped(v, r.preset, r.method)
        for v, r in zip(table["tuned_file"], table.itertuples(index=False), strict=True)
    ]


def part_by_size(folder: str | Path, rows: pd.DataFrame) -> pd.DataFrame | None:
    """The by-size meta rows a release part carries (its ``meta_by_size.csv``, written from
    the part's run folders by ``udora meta RESULTS``; None when it has none), checked: the
    columns ``udora meta`` writes, and only (preset, seed) cells of the part's own ok
    ``rows``. Raises UserError naming the file otherwise."""
    from udora.experiments.meta.taus import SIZE_COLUMNS

    path = Path(folder) / BY_SIZE
    if not path.is_file():
        return None
    found = reading.table(path, whole_lines=True, float_precision="round_trip")  # bit for bit
    if list(found.columns) != list(SIZE_COLUMNS):
        raise UserError(f"{path}: expected the columns {', '.join(SIZE_COLUMNS)}")
    seeds = pd.to_numeric(found["seed"], errors="coerce")
    if seeds.isna().any() or (seeds != seeds.round()).any():
        raise UserError(f"{path}: expected an integer seed on every row")
    ok = rows[rows["status"] == "ok"]
    known = set(zip(ok["preset"], ok["seed"].astype(int), strict=True))
    cells = set(zip(found["preset"], seeds.astype(int), strict=True))
    if cells - known:
        preset, seed = sorted(cells - known)[0]
        raise UserError(f"{path}: rows of {preset} seed {seed}, which the part has no runs of")
    return found


def _joined_by_size(found: dict[str, pd.DataFrame | None]) -> pd.DataFrame | None:
    """The release's by-size rows: every input's (``found``: input -> its rows, None for
    a results folder or a part without), sorted by cell, when every input carries them;
    None when none does. Some but not all would leave presets out of the meta-evaluation
    by number of points unsaid, and one cell's rows from two parts (each ranking its own
    configs) would be averaged: a UserError names the input or the cell."""
    carried = {k: v for k, v in found.items() if v is not None}
    if not carried:
        return None
    if len(carried) < len(found):
        without = sorted(set(found) - set(carried))[0]
        raise UserError(
            f"{without}: no {BY_SIZE} while other parts carry one; each part needs the "
            f"one `udora meta` writes from its run folders (or none does)"
        )
    joined = pd.concat(list(carried.values()), ignore_index=True)
    twice = joined[joined.duplicated(["preset", "seed", "observable", "size"], keep=False)]
    if not twice.empty:
        r = twice.iloc[0]
        raise UserError(
            f"{r.preset} seed {r.seed}: by-size rows in two parts (each ranks only its own "
            f"configs); a cell's rows come from the one part that holds all its runs"
        )
    return joined.sort_values(["preset", "seed"], kind="stable")  # each cell's rows as written


def _listed(source: str | Path) -> dict[str, Any]:
    """The files a release folder's manifest lists ({} when it is none)."""
    folder = release_folder(source)
    if folder is None:
        return {}
    return reading.json_object(folder / MANIFEST).get("files", {})


def _base_rows(
    base: str | Path, replaced: set[str]
) -> tuple[pd.DataFrame, dict[str, Any], dict[str, Any]]:
    """(rows, about, oracles) of the release ``base`` for a new version of it: its rows of
    every method not in ``replaced`` with their curves (a ``_curves`` column), what the
    new manifest says of the base (its version, built_from, and a ``record`` naming its
    files' SHA-256 and the methods replaced) and its sampled oracles. Raises
    FileNotFoundError when ``base`` is no release folder and UserError when it has no
    row of a replaced method (a new version replaces rows, it does not add methods)."""
    table, manifest = _release_rows(base)
    missing = sorted(replaced - set(table["method"]))
    if missing:
        raise UserError(
            f"{base}: no rows of {', '.join(missing)}; a new version reruns methods the release has"
        )
    version = int(manifest.get("version", 1))
    about = {
        "version": version,
        "built_from": [
            f"{base}:{b}" if "@v" in str(base) else f"{base}@v{version}:{b}"
            for b in manifest.get("built_from", [])
        ],
        "record": {
            "version": version,
            "files": manifest["files"],
            "replaced_methods": sorted(replaced),
        },
    }
    return table[~table["method"].isin(replaced)], about, manifest.get("oracles", {})


def _add_oracles(
    oracles: dict[str, dict[str, Any]], found: dict[str, dict[str, Any]], where: Any
) -> dict[str, dict[str, Any]]:
    """Add ``found`` (task hash -> sampled oracle record) to ``oracles`` and return it;
    a task whose arrays differ from those already there (other draws: another CPU, or a
    build with other threads) is a UserError naming ``where``."""
    for task_hash, entry in found.items():
        known = oracles.get(task_hash)
        if known is not None and known.get("sha256") != entry.get("sha256"):
            raise UserError(
                f"{where}: task {task_hash} ({entry.get('preset')} seed {entry.get('seed')}) "
                f"was scored on other oracle arrays ({str(entry.get('sha256'))[:12]}) than "
                f"the release's other runs of it ({str(known.get('sha256'))[:12]}); a "
                "release holds one set of targets per task"
            )
        oracles[task_hash] = entry
    return oracles


def _check_oracles(table: pd.DataFrame, oracles: dict[str, dict[str, Any]]) -> None:
    """Every ok row of a task with a sampled oracle was scored on the arrays the manifest
    lists for it (its ``oracle_sha256``); a UserError names the first that was not."""
    if not oracles or "oracle_sha256" not in table:
        return
    ok = table[(table["status"] == "ok") & table["task_hash"].isin(list(oracles))]
    for r in ok.itertuples(index=False):
        listed = oracles[r.task_hash].get("sha256")
        if r.oracle_sha256 != listed:
            raise UserError(
                f"{r.preset} {r.config} seed {r.seed}: scored on oracle arrays "
                f"{str(r.oracle_sha256)[:12]}, not the {str(listed)[:12]} of its task's "
                "other runs; a release holds one set of targets per task"
            )


def _release_rows(source: str | Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    """(rows, manifest) of the release folder ``source``, its files checked against its
    manifest: each row with its curves (a ``_curves`` column) and, for the columns an
    older release predates, load_runs' values for records written before them. Raises
    FileNotFoundError when ``source`` is no release folder and UserError when its curves
    are not its rows'."""
    from udora.experiments.results.store import LEGACY

    folder = release_folder(source)
    if folder is None:
        raise FileNotFoundError(f"{source}: not a release folder (no manifest.json)")
    table, _, manifest = read_release(folder)
    keyed = json.loads(gzip.decompress((folder / CURVES).read_bytes()))
    if [k["run"] for k in keyed] != table["run"].tolist():
        raise UserError(f"{folder / CURVES}: its entries are not the table's rows, in order")
    table = table.assign(_curves=[k["curves"] for k in keyed])
    for column, value in LEGACY.items():
        if column not in table:
            table[column] = value
    return table, manifest


def _sampled_oracles(root: Path, table: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """{task hash: record} of the sampled oracles the ok runs of a kind with Monte Carlo
    targets (classification) were scored on: preset, seed, the SHA-256 of the stored
    arrays (a run on other arrays is refused beside the release:
    :func:`udora.experiments.rankings.baseline.match`), the oracle's own Monte Carlo
    ceiling, the split-half Spearman of each target and the AU ceiling (docs/design.md,
    "Classification: diagnostics"), and ``class_shares``, each class's share of the pool's
    drawn labels (the draw's class balance, which is the prior function's, not the
    data's)."""
    from udora.experiments.tasks import arrays as oracle_arrays
    from udora.experiments.tasks.kinds import run_kind

    out: dict[str, dict[str, Any]] = {}
    ok = table[table["status"] == "ok"]
    if "kind" not in ok:
        return out
    for kind, part in ok.groupby("kind"):
        if run_kind(str(kind)).standard_errors is None:  # exact targets
            continue
        for task_hash, rows in part.groupby("task_hash"):
            record = oracle_arrays.paths(root, str(task_hash))[1]
            try:
                entry = reading.json_object(record)
            except (OSError, ValueError):
                raise UserError(
                    f"{record}: the oracle arrays of {rows['preset'].iloc[0]} seed "
                    f"{int(rows['seed'].iloc[0])} are not stored beside its runs"
                ) from None
            meta = entry.get("meta", {})
            stored = oracle_arrays.paths(root, str(task_hash))[0]
            drawn = reading.arrays(stored, names=("y", "prob"))
            classes = drawn["prob"].shape[1]  # a class no pool label drew still counts
            counts = np.bincount(np.asarray(drawn["y"], dtype=np.int64), minlength=classes)
            out[str(task_hash)] = {
                "preset": str(rows["preset"].iloc[0]),
                "seed": int(rows["seed"].iloc[0]),
                "sha256": entry.get("sha256"),
                "split_half_spearman": meta.get("diagnostics", {}).get("split_half_spearman"),
                "au_ceiling_spearman": meta.get("au_ceiling_spearman"),
                "class_shares": [round(float(c), 6) for c in counts / counts.sum()],
            }
    return out


def code_line(manifest: dict[str, Any]) -> str:
    """The commits and source hashes a release's runs recorded, as Markdown for its pages."""
    commits = manifest.get("commit") or ["unknown"]
    commits = [commits] if isinstance(commits, str) else commits  # one string before 0.3
    text = ", ".join(f"`{c}`" for c in commits)
    sources = manifest.get("source_sha256") or []
    if sources:
        text += " (source SHA-256 " + ", ".join(f"`{h[:12]}`" for h in sources) + ")"
    if manifest.get("dirty_runs"):
        text += f"; **{manifest['dirty_runs']} runs had uncommitted changes to the sources**"
    return text


def primary_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The rows a release's statistics use: all but those computed on a package copy of a
    preset's data (shipped for offline comparison only, docs/release.md), so no preset is
    averaged over two tasks."""
    if "data_kind" not in table:
        return table
    return table[table["data_kind"] != "package"]


def release_folder(source: str | Path) -> Path | None:
    """The release folder ``source`` names: the shipped one for ``"release"``, an earlier
    shipped version for ``"release@vN"`` (kept in the shipped folder's ``vN/``; the newest
    is the folder itself), a folder with a manifest.json, else None."""
    text = str(source)
    if text == SHIPPED:
        return Path(str(resources.files("udora.release")))
    if text.startswith(f"{SHIPPED}@v") and text[len(SHIPPED) + 2 :].isdigit():
        root = Path(str(resources.files("udora.release")))
        wanted = int(text[len(SHIPPED) + 2 :])
        newest = int(reading.json_object(root / MANIFEST).get("version", 1))
        folder = root if wanted == newest else root / f"v{wanted}"
        return folder if (folder / MANIFEST).is_file() else None
    path = Path(source)
    return path if (path / MANIFEST).is_file() else None


def read_release(folder: str | Path) -> tuple[pd.DataFrame, dict, dict]:
    """(table, curves, manifest) of a release folder, after checking both files against
    the manifest's SHA-256. ``curves`` is keyed by (preset, method, config, seed) for the
    primary rows (:func:`primary_rows`), whose keys are unique. Raises FileNotFoundError
    naming a missing file and ValueError naming a file whose checksum does not match."""
    folder = Path(folder)
    if not (folder / MANIFEST).is_file():
        raise FileNotFoundError(
            f"{folder / MANIFEST}: no release manifest (build one with udora release build)"
        )
    manifest = reading.json_object(folder / MANIFEST)
    listed = manifest.get("files")
    if not isinstance(listed, dict) or {TABLE, CURVES} - set(listed):
        raise UserError(
            f"{folder / MANIFEST}: expected 'files' with the SHA-256 of {TABLE} and {CURVES}"
        )
    for name, digest in listed.items():
        path = folder / check_name(name, f"{folder / MANIFEST}: file")
        if not path.is_file():
            raise FileNotFoundError(f"{path}: listed in {MANIFEST} but missing")
        if _sha256(path) != digest:
            raise UserError(
                f"{path}: its SHA-256 is not the one {MANIFEST} records; the "
                "file was changed after the release was built"
            )
    table = checked_table(reading.table(folder / TABLE), folder / TABLE, "release")
    keyed = reading.json_value(folder / CURVES)
    shape_ok = isinstance(keyed, list) and all(
        isinstance(k, dict)
        and isinstance(k.get("key"), list)
        and len(k["key"]) == 4
        and isinstance(k.get("curves"), dict)
        for k in keyed
    )
    if not shape_ok:
        raise UserError(
            f"{folder / CURVES}: expected a list of {{key: [preset, method, config, seed], "
            "curves: {...}}} entries"
        )
    primary = set(primary_rows(table)["run"]) if "run" in table else None
    curves = {
        tuple(k["key"]): k["curves"]
        for k in keyed  # the report's rows: primary ones
        if primary is None or k.get("run") in primary
    }
    return table, curves, manifest


def load_baseline(source: str | Path) -> pd.DataFrame:
    """The baseline table: ``"release"`` (the shipped one) or a release folder (read only
    when its checksums match, :func:`udora.experiments.publish.artefact.read_release`;
    with the classification release of its ``classification/`` subfolder, when it has
    one, so that runs of both kinds find their rows), a
    results folder (its runs, read as ``udora report`` reads them), or a ``.parquet``/
    ``.csv`` results table. Raises FileNotFoundError naming what is missing, ValueError
    naming a missing column or a file that does not match its release manifest."""
    path = Path(source)
    folder = release_folder(source)
    if folder is not None:
        own = folder / CLASSIFICATION  # the classification release shipped beside it
        if (own / MANIFEST).is_file():
            return pd.concat([read_release(folder)[0], read_release(own)[0]], ignore_index=True)
        return read_release(folder)[0]
    if path.is_dir():
        from udora.experiments.results.store import load_runs

        return load_runs(path)[0]
    if path.suffix not in (".parquet", ".csv"):
        raise FileNotFoundError(
            f"{path}: expected 'release', a results folder, or a .parquet or .csv results table"
        )
    return checked_table(reading.table(path, whole_lines=True), path, "baseline", NEEDED)


def checked_table(
    table: pd.DataFrame, path: Path, what: str, needed: tuple[str, ...] = ROW
) -> pd.DataFrame:
    """A results table read from a file (a release's, a baseline): it has the columns
    ``needed``, those of :data:`ROW` filled in every row, an integer ``seed``, and numbers
    in every metric, standard-error and timing column (a column of text is an error
    naming it); raises a UserError naming ``path``, the column and the row."""
    from udora.oracle.kinds import kind_names
    from udora.scoring.registry import names

    missing = [c for c in needed if c not in table]
    if missing:
        raise UserError(f"{path}: the {what} table has no column {', '.join(missing)}")
    for column in ROW:  # a task hash may be missing (old runs): the comparison says so
        empty = table[column].isna()
        if empty.any():
            row = int(empty.to_numpy().nonzero()[0][0])
            raise UserError(f"{path}: row {row} has no {column} (a cut or edited table?)")
    metrics = {name for kind in kind_names() for name in names(kind)}
    numeric = [c for c in table.columns if c in metrics or str(c).startswith(("se.", "time_"))]
    table = reading.numbers(table, ["seed", *numeric], path)
    seeds = table["seed"]
    bad = seeds[(seeds < 0) | (seeds % 1 != 0)]
    if len(bad):
        raise UserError(
            f"{path}: column 'seed' holds {bad.iloc[0]!r} (row {bad.index[0]}), "
            "not a non-negative integer"
        )
    return table.assign(seed=seeds.astype(int))
