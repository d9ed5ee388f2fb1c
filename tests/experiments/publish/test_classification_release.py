"""The shipped classification release (release/classification/, issue 46): every method on
every classification preset at every seed, all ok, its files and oracle checksums as its
manifest says (SHA-256 computed here with hashlib), and its pages (the leaderboard, the
findings, the meta-evaluation) regenerated from it byte for byte."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from udora.experiments.cli.main import app
from udora.experiments.publish.artefact import CLASSIFICATION, release_folder
from udora.methods.registry import method_infos
from udora.oracle.classification.preset import CLASSIFICATION as CLASSIFICATION_KIND

ROOT = Path(__file__).resolve().parents[3]
DOCS = ROOT / "docs"


@pytest.fixture(scope="module")
def shipped() -> Path:
    return release_folder("release") / CLASSIFICATION


def test_every_method_preset_and_seed_is_one_ok_run(shipped):
    table = pd.read_parquet(shipped / "results.parquet")
    manifest = json.loads((shipped / "manifest.json").read_text())
    presets = sorted(p for names in manifest["presets"].values() for p in names)
    methods = sorted(
        info.name
        for info in method_infos()
        if info.origin == "built-in" and CLASSIFICATION_KIND in info.kinds
    )
    assert len(presets) == 14 and len(methods) == 14
    assert (table["status"] == "ok").all() and manifest["failed"] == []
    primary = table[table["method_seed"].isna()]
    cells = primary.groupby(["preset", "method", "seed"]).size()
    assert (cells == 1).all()
    assert sorted(primary["preset"].unique()) == presets
    assert sorted(primary["method"].unique()) == methods
    assert sorted(primary["seed"].unique()) == [0, 1, 2]
    assert len(primary) == 14 * 14 * 3
    floor = table[table["method_seed"].notna()]  # the noise floor: pima and vehicle, seed 0
    assert sorted(floor["preset"].unique()) == ["pima", "vehicle"]
    assert set(floor["seed"]) == {0} and len(floor) == 2 * 14 * 3
    assert manifest["runs"] == manifest["ok"] == len(table) == 672


def test_the_files_and_each_runs_arrays_are_the_manifests(shipped):
    manifest = json.loads((shipped / "manifest.json").read_text())
    for name, digest in manifest["files"].items():
        assert hashlib.sha256((shipped / name).read_bytes()).hexdigest() == digest, name
    table = pd.read_parquet(shipped / "results.parquet")
    listed = {task: entry["sha256"] for task, entry in manifest["oracles"].items()}
    assert len(listed) == 42 and set(table["task_hash"]) == set(listed)
    assert (table["oracle_sha256"] == table["task_hash"].map(listed)).all()
    for preset in {p for names in manifest["presets"].values() for p in names}:
        assert sorted((shipped / "tuned" / preset).glob("*.yaml")), preset


def _cli(*args: str) -> None:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output


@pytest.mark.slow  # seconds each: in the slow set (CI runs it)
def test_the_committed_pages_regenerate_from_the_shipped_release(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)  # the pages name the command as run from the checkout
    out = tmp_path / "docs"
    _cli("release", "page", "release/classification", "--docs", str(out))
    _cli("release", "claims", "release/classification", "--docs", str(out))
    _cli("meta", "release/classification", "--out", str(out / "meta"))
    for page in ("leaderboard_classification.md", "classification.md"):
        text = (out / page).read_text().replace(f"--docs {out}", "--docs docs")
        assert text == (DOCS / page).read_text(), page
    for name in ("meta.md", "meta_cells.csv", "meta_pooled.csv", "meta_by_size.csv"):
        committed = DOCS / "data" / "meta_classification" / name
        assert (out / "meta" / name).read_bytes() == committed.read_bytes(), name
