"""Every kind of file a command reads, damaged in every way (issue "trust boundaries"): cut
in half; the wrong type (a JSON list where an object belongs, a YAML scalar, a string
where a number belongs, text in a numeric column or array); the wrong shape (arrays too
short or of another rank, a ragged CSV row); nested 100 000 deep; a huge header (an array
header that claims 10^12 floats, one of several megabytes, a multi-megabyte first line);
an ``.npy`` array where an ``.npz`` archive belongs.

Each ends as one line ``error: ...`` on stderr naming the file, exit 2, never a traceback,
a ``bug:`` line or a traceback file. Where docs/running.md says otherwise, the case says
so: a damaged run folder is skipped, saying why and naming its result.json (a folder
with no readable run left is then the error; a grid reruns it and exits 0), and a data
table that breaks a grid's run or a sweep's trial fails it (exit 1) with a record that
names the file.

Commands run in this process through the console script's ``main()`` (as
tests/test_cli_errors.py does), each on its own copy of one module-scoped world. The
default test command runs a subset that covers each (file kind, damage) and each
(command, file kind) once; the slow set runs the whole cross product.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import io
import json
import shutil
import sys
import warnings
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import typer
import yaml
from tiny_presets import one_tiny_preset
from typer.testing import CliRunner

from udora.experiments.cli.main import app, main

runner = CliRunner()
NESTED = 100_000
HUGE = 2 << 20  # bytes of a first line


# --- the damage ---------------------------------------------------------------------


def cut_in_half(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def nested_json(path: Path) -> None:
    path.write_text("[" * NESTED + "]" * NESTED)


def nested_yaml(path: Path) -> None:
    path.write_text("a: " + "[" * NESTED + "]" * NESTED + "\n")


def huge_line(path: Path) -> None:
    path.write_text("x" * HUGE + "\n")


def json_list(path: Path) -> None:
    path.write_text(json.dumps([json.loads(path.read_text())]))


def yaml_scalar(path: Path) -> None:
    path.write_text("just a sentence\n")


def json_field(key: str, value: object) -> Callable[[Path], None]:
    def damage(path: Path) -> None:
        data = json.loads(path.read_text())
        data[key] = value
        path.write_text(json.dumps(data))

    return damage


def yaml_field(key: str, value: object) -> Callable[[Path], None]:
    def damage(path: Path) -> None:
        data = yaml.safe_load(path.read_text())
        data[key] = value
        path.write_text(yaml.safe_dump(data))

    return damage


def _arrays(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def npy_not_npz(path: Path) -> None:
    buffer = io.BytesIO()
    np.save(buffer, next(iter(_arrays(path).values())))
    path.write_bytes(buffer.getvalue())


def _rewrite(path: Path, change: Callable[[np.ndarray], np.ndarray]) -> None:
    found = _arrays(path)
    with path.open("wb") as fh:
        np.savez(fh, **{k: change(v) for k, v in found.items()})


def arrays_too_short(path: Path) -> None:
    _rewrite(path, lambda v: v[: max(len(v) // 2, 1)] if v.ndim else v)


def arrays_of_another_rank(path: Path) -> None:
    _rewrite(path, lambda v: v[None, ...])


def arrays_of_text(path: Path) -> None:
    _rewrite(path, lambda v: np.full(v.shape, "abc"))


def huge_array_header(path: Path) -> None:
    """Every member's header claims 10^12 float64 (8 TB); the data stay as they were."""
    found = _arrays(path)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, value in found.items():
            member = io.BytesIO()
            header = {"descr": "<f8", "fortran_order": False, "shape": (10**12,)}
            np.lib.format.write_array_header_1_0(member, header)
            member.write(np.ascontiguousarray(value, dtype=float).tobytes())
            archive.writestr(f"{name}.npy", member.getvalue())
    path.write_bytes(buffer.getvalue())


def long_array_header(path: Path) -> None:
    """Every member's .npy header is several megabytes long (numpy refuses over 10 000
    bytes: a header is parsed as Python literals)."""
    found = _arrays(path)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, value in found.items():
            header = f"{{'descr': '<f8', 'fortran_order': False, 'shape': {value.shape}, }}"
            header = (header + " " * HUGE + "\n").encode("latin1")
            member = b"\x93NUMPY\x02\x00" + len(header).to_bytes(4, "little") + header
            member += np.ascontiguousarray(value, dtype=float).tobytes()
            archive.writestr(f"{name}.npy", member)
    path.write_bytes(buffer.getvalue())


def text_column(column: str) -> Callable[[Path], None]:
    def damage(path: Path) -> None:
        parquet = path.suffix == ".parquet"
        frame = pd.read_parquet(path) if parquet else pd.read_csv(path)
        frame[column] = frame[column].astype(object)
        frame.loc[frame.index[-1], column] = "abc"
        if parquet:
            frame[column] = frame[column].astype(str)
            frame.to_parquet(path)
        else:
            frame.to_csv(path, index=False)

    return damage


def huge_header_line(path: Path) -> None:
    """A table whose first line is several megabytes (gzip-compressed for ``.gz``)."""
    text = "x" * HUGE + "\n1\n"
    path.write_bytes(gzip.compress(text.encode()) if path.suffix == ".gz" else text.encode())


def gz_text_column(path: Path) -> None:
    frame = pd.read_csv(path)
    frame["a"] = frame["a"].astype(object)
    frame.loc[3, "a"] = "abc"
    frame.to_csv(path, index=False)


def gz_ragged(path: Path) -> None:
    """A row with more fields than the header (the wrong shape)."""
    lines = gzip.decompress(path.read_bytes()).decode().splitlines()
    lines[2] += ",1,2,3"
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))


def resigned_release(damage: Callable[[Path], None]) -> Callable[[Path], None]:
    """``damage`` to a release's file, with the SHA-256 in its manifest made to match, as
    someone who edits a release by hand would."""

    def both(path: Path) -> None:
        damage(path)
        where = path.parent / "manifest.json"
        data = json.loads(where.read_text())
        data["files"][path.name] = hashlib.sha256(path.read_bytes()).hexdigest()
        where.write_text(json.dumps(data))

    return both


def nested_gz(path: Path) -> None:
    path.write_bytes(gzip.compress(("[" * NESTED + "]" * NESTED).encode()))


def unlisted(damage: Callable[[Path], None]) -> Callable[[Path], None]:
    """``damage`` to a task export's file, with the checksums dropped from its task.json
    (an export of udora before 0.3 lists none): the arrays' reader must catch it."""

    def both(path: Path) -> None:
        damage(path)
        manifest = path.parent / "task.json"
        manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "files": None}))

    return both


def stored(damage: Callable[[Path], None]) -> Callable[[Path], None]:
    """``damage`` to a stored task's arrays, with the SHA-256 in its record made to match."""

    def both(path: Path) -> None:
        damage(path)
        record = path.with_suffix(".json")
        entry = json.loads(record.read_text())
        entry["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
        record.write_text(json.dumps(entry))

    return both


JSON = {"cut": cut_in_half, "list": json_list, "nested": nested_json, "huge-line": huge_line}
YAML = {"cut": cut_in_half, "scalar": yaml_scalar, "nested": nested_yaml, "huge-line": huge_line}
NPZ = {
    "cut": cut_in_half,
    "npy": npy_not_npz,
    "short": arrays_too_short,
    "rank": arrays_of_another_rank,
    "text": arrays_of_text,
    "huge-header": huge_array_header,
    "long-header": long_array_header,
}
DATA_DAMAGE = {
    "cut": cut_in_half,
    "text": gz_text_column,
    "ragged": gz_ragged,
    "huge-line": huge_header_line,
}


def table_damage(column: str) -> dict[str, Callable[[Path], None]]:
    return {"cut": cut_in_half, "text": text_column(column), "huge-line": huge_header_line}


# --- the world and the cases ----------------------------------------------------------


def cli(template: str, *more: str) -> list[str]:
    """A command line: ``template`` split at spaces (its ``{root}``, ``{tmp}`` and
    ``{preset}`` filled in per case), then ``more`` as they are."""
    return [*template.split(), *more]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A tiny preset and its data; a results folder with one run, and one with two configs
    (for ``udora meta``); an exported task; an oracle folder; a sweep file, a tuned
    folder, a study file; a release and baseline tables; predictions files for ``udora
    score``."""
    root = tmp_path_factory.mktemp("world")
    one_tiny_preset(root, rows=60, n_train=30)
    for template in (
        "run --preset {preset} --method blr --out {root}/results --data-dir {root}/data",
        "run --preset {preset} --method blr --out {root}/two --data-dir {root}/data",
        "run --preset {preset} --method blr --set alpha=2 --out {root}/two --data-dir {root}/data",
        "export --presets {preset} --out {root}/tasks --data-dir {root}/data",
        "oracle build --preset {preset} --out {root}/oracle --data-dir {root}/data",
        "sweep init --preset {preset} --method blr --trials 2 --out {root}/sweep.yaml",
        "release build {root}/results --out {root}/release",
    ):
        argv = [a.format(root=root, preset=root / "tiny.yaml") for a in cli(template)]
        done = runner.invoke(app, argv)
        assert done.exit_code == 0, done.output
    (root / "tuned" / "tiny").mkdir(parents=True)
    tuned = {"preset": "tiny", "method": "blr", "tuned": True, "config": {"alpha": 0.5}}
    (root / "tuned" / "tiny" / "blr.yaml").write_text(yaml.safe_dump(tuned))
    study = {"name": "alpha", "factor": "alpha", "levels": [1, 2], "methods": ["blr"]}
    study["presets"] = [str(root / "tiny.yaml")]
    (root / "study.yaml").write_text(yaml.safe_dump(study))
    table = pd.read_parquet(root / "release" / "results.parquet")
    table.to_parquet(root / "baseline.parquet")
    table.to_csv(root / "baseline.csv", index=False)
    n = len(pd.read_csv(root / "tasks" / "tiny" / "seed-0" / "pool.csv"))
    fields = {"mean": np.zeros(n), "aleatoric": np.ones(n), "epistemic": np.ones(n)}
    np.savez(root / "pred.npz", row_id=np.arange(n), **fields)
    frame = pd.DataFrame({"row_id": np.arange(n), **fields})
    frame.to_csv(root / "pred.csv", index=False)
    frame.to_parquet(root / "pred.parquet")
    return root


DATA = "--data-dir {root}/data"
TASK = "{root}/tasks/tiny/seed-0"
RUN = "{root}/results/tiny/blr/*/seed-0"
SCORE = cli(f"score {{root}}/pred.npz --method ext --task {TASK}")
PRESET_READERS = {  # command -> its command line
    "run": cli(f"run --preset {{preset}} --method blr --out {{tmp}}/out {DATA}"),
    "bench": cli(f"bench --presets {{preset}} --methods blr --out {{tmp}}/out {DATA}"),
    "export": cli(f"export --presets {{preset}} --out {{tmp}}/out {DATA}"),
    "score": cli(f"score {{root}}/pred.npz --method x --preset {{preset}} --seed 0 {DATA}"),
    "oracle build": cli(f"oracle build --preset {{preset}} --out {{tmp}}/out {DATA}"),
    "presets show": cli(f"presets show {{preset}} {DATA}"),
    "presets fit": cli(f"presets fit {{preset}} --subset 30 {DATA}"),
    "sweep init": cli("sweep init --preset {preset} --method blr --out {tmp}/s.yaml"),
    "sweep trial": cli(f"sweep trial preset={{preset}} method=blr {DATA}"),
    "sweep run": cli(f"sweep run {{root}}/sweep.yaml --out {{tmp}}/out {DATA}"),
    "tune": cli(f"tune --presets {{preset}} --methods blr --trials 1 --out {{tmp}}/out {DATA}"),
    "ablate": cli(
        f"ablate --factor alpha=1,2 --presets {{preset}} --methods blr --out {{tmp}}/out {DATA}"
    ),
    "diagnose": cli(
        f"diagnose --preset {{preset}} --method blr --draws 2 --out {{tmp}}/out {DATA}"
    ),
}
GRIDS = ("bench", "ablate", "diagnose", "tune", "sweep run")  # a run fails: exit 1


@dataclass(frozen=True)
class Case:
    """``argv`` run on a copy of the world whose file ``target`` (a glob) got ``damage``;
    the outcome: exit ``code``, and the damaged file on the error line, or its run folder
    and name on any line when ``skipped`` (a run folder passed over or rerun)."""

    argv: list[str]
    target: str
    damage: Callable[[Path], None]
    code: int = 2
    skipped: bool = False


def _cases() -> dict[str, Case]:
    cases: dict[str, Case] = {}

    def add(command: str, kind: str, damages: dict, argv: list[str], target: str, **kw):
        for name, damage in damages.items():
            cases[f"{command}|{kind}|{name}"] = Case(argv, target, damage, **kw)

    # a preset and its data table
    for command, argv in PRESET_READERS.items():
        add(
            command, "preset", {**YAML, "field": yaml_field("pool_size", "many")}, argv, "tiny.yaml"
        )
        code = 1 if command in GRIDS else 2
        if command not in ("sweep init",):  # writes a file that names the preset only
            add(command, "data", DATA_DAMAGE, argv, "data/tiny.csv.gz", code=code)
    # a run folder: skipped, saying why; a folder with no readable run left is the error
    run_damage = {**JSON, "field": json_field("seed", "zero")}
    for command, argv in {
        "report": cli("report {root}/results --out {tmp}/out"),
        "release build": cli("release build {root}/results --out {tmp}/out"),
        "meta": cli("meta {root}/results --out {tmp}/out --boot 10 --sizes", ""),
        "robustness": cli("robustness {root}/results --docs {tmp}/out --boot 100"),
        "report --baseline": cli("report {root}/two --out {tmp}/out --baseline {root}/results"),
    }.items():
        add(command, "result.json", run_damage, argv, f"{RUN}/result.json", skipped=True)
        add(command, "predictions", NPZ, argv, f"{RUN}/predictions.npz", skipped=True)
    # a grid reruns a damaged run, saying why (exit 0 once it ran)
    bench = cli(f"bench --presets {{preset}} --methods blr --out {{root}}/results {DATA}")
    add("bench", "result.json", run_damage, bench, f"{RUN}/result.json", code=0, skipped=True)
    # a task's stored oracle arrays, which meta reads instead of building the task again
    meta = cli("meta {root}/two --out {tmp}/out --boot 10 --min-methods 2 --jobs 1 --sizes", "")
    add("meta", "oracle record", run_damage, meta, "two/oracle/*.json")
    add("meta", "oracle arrays", NPZ, meta, "two/oracle/*.npz")
    resigned = {k: stored(v) for k, v in NPZ.items()}
    add("meta", "oracle arrays (re-signed)", resigned, meta, "two/oracle/*.npz")
    # an exported task, and predictions scored on it
    add("score", "task.json", run_damage, SCORE, f"{TASK}/task.json")
    unchecked = {k: unlisted(v) for k, v in NPZ.items()}
    for name in ("train.npz", "pool.npz"):
        add("score", name, NPZ, SCORE, f"{TASK}/{name}")
        add("score", f"{name} (no checksums)", unchecked, SCORE, f"{TASK}/{name}")
    add("score", "predictions.npz", NPZ, SCORE, "pred.npz")
    for suffix in ("csv", "parquet"):
        argv = cli(f"score {{root}}/pred.{suffix} --method ext --task {TASK}")
        add("score", f"predictions.{suffix}", table_damage("mean"), argv, f"pred.{suffix}")
    # an oracle folder
    show = cli("oracle show {root}/oracle")
    add("oracle show", "oracle.json", run_damage, show, "oracle/oracle.json")
    add("oracle show", "oracle.npz", NPZ, show, "oracle/oracle.npz")
    # a tuned folder, a study, a sweep
    tuned = cli(
        f"bench --presets {{preset}} --methods blr --tuned {{root}}/tuned --out {{tmp}}/out {DATA}"
    )
    tuned_damage = {**YAML, "field": yaml_field("config", {"alpha": "big"})}
    add("bench --tuned", "tuned", tuned_damage, tuned, "tuned/tiny/blr.yaml")
    ablate = cli(f"ablate {{root}}/study.yaml --out {{tmp}}/out {DATA}")
    add("ablate", "study", {**YAML, "field": yaml_field("seeds", "zero")}, ablate, "study.yaml")
    sweep = PRESET_READERS["sweep run"]
    add("sweep run", "sweep", {**YAML, "field": yaml_field("run_cap", "many")}, sweep, "sweep.yaml")
    # a baseline table, and a release folder as a baseline and on its own
    for suffix in ("parquet", "csv"):
        argv = cli(
            f"report {{root}}/results --out {{tmp}}/out --baseline {{root}}/baseline.{suffix}"
        )
        add("report --baseline", suffix, table_damage("spearman_eu"), argv, f"baseline.{suffix}")
    manifest_damage = {**JSON, "field": json_field("files", "all of them")}
    release_damage = {"text": resigned_release(text_column("spearman_eu"))}
    curves_damage = {"cut": resigned_release(cut_in_half), "nested": resigned_release(nested_gz)}
    for command, argv in {
        "report --baseline": cli("report {root}/results --out {tmp}/out --baseline {root}/release"),
        "release claims": cli("release claims {root}/release --docs {tmp}/out"),
        "release page": cli("release page {root}/release --docs {tmp}/out"),
        "report": cli("report {root}/release --out {tmp}/out"),
    }.items():
        add(command, "manifest", manifest_damage, argv, "release/manifest.json")
        add(command, "release table", release_damage, argv, "release/results.parquet")
        add(command, "curves", curves_damage, argv, "release/curves.json.gz")
    # the runs' table of a robustness page
    robustness = cli("robustness {root}/baseline.parquet --docs {tmp}/out --boot 100")
    add("robustness", "table", table_damage("spearman_eu"), robustness, "baseline.parquet")
    return cases


CASES = _cases()


def _params() -> list:
    """Every case; those the default test command skips are marked slow. The default set
    still covers each (file kind, damage) and each (command, file kind) once: the rest
    of the cross product reads through the same readers."""
    seen: set[tuple[str, str]] = set()
    out = []
    for name in sorted(CASES):
        command, kind, damage = name.split("|")
        new = {(kind, damage), (command, kind)} - seen
        seen |= {(kind, damage), (command, kind)}
        out.append(pytest.param(name, marks=() if new else pytest.mark.slow))
    return out


@functools.cache
def _command():
    """The click command of ``udora``, built once (typer builds it again on every call of
    the app, 40 ms; the app runs it as it is)."""
    return typer.main.get_command(app)


def _udora(monkeypatch, capsys, argv: list[str]) -> tuple[int, str, list[str]]:
    """(exit code, everything printed, the lines of stderr) of ``udora ARGV``; udora's
    warnings are added to both as its console prints them."""
    monkeypatch.setattr(sys, "argv", ["udora", *argv])
    monkeypatch.setattr("udora.experiments.cli.main.app", _command())
    with warnings.catch_warnings(record=True) as caught, pytest.raises(SystemExit) as exit_:
        warnings.simplefilter("always")
        main()
    out, err = capsys.readouterr()
    said = [f"warning: {w.message}" for w in caught if w.category.__module__.startswith("udora")]
    return exit_.value.code, "\n".join([out, err, *said]), [*err.splitlines(), *said]


@pytest.mark.parametrize("name", _params())
def test_a_damaged_file_is_one_line_naming_it(world, name, tmp_path, monkeypatch, capsys):
    case = CASES[name]
    root, here = tmp_path / "world", tmp_path / "tmp"
    shutil.copytree(world, root, symlinks=True)
    for path in root.glob("*.yaml"):  # a sweep or study file names the preset by its path
        path.write_text(path.read_text().replace(str(world), str(root)))
    here.mkdir()
    monkeypatch.chdir(here)
    monkeypatch.setattr("tempfile.tempdir", str(here))  # where a bug's traceback would go
    (target,) = root.glob(case.target.format(root=".").removeprefix("./"))
    case.damage(target)
    argv = [a.format(root=root, tmp=here, preset=root / "tiny.yaml") for a in case.argv]
    code, said, stderr = _udora(monkeypatch, capsys, argv)
    lines = [line for line in said.splitlines() if line.strip()]
    assert "Traceback" not in said and not any(line.startswith("bug:") for line in lines), said
    assert not list(here.glob("udora-bug-*")), said
    assert code == case.code, said
    if code == 2:  # one line on stderr (warnings aside), naming the file
        errors = [line for line in stderr if line.strip() and not line.startswith("warning:")]
        assert len(errors) == 1 and errors[0].startswith("error: "), said
    if case.skipped:  # its run folder and the file, on the error, a warning or a rerun line
        run = "/".join(target.parent.parts[-4:])
        assert any(run in line and target.name in line for line in lines), said
    elif code == 2:
        assert str(target) in errors[0], said
    else:  # a run (or a trial) failed, and its record names the file
        records = (here / "out").rglob("*.json")
        assert any(str(target) in path.read_text() for path in records), said
