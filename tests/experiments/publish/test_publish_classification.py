"""A classification release built from real runs of a tiny preset: its manifest records each
sampled oracle's checksum and Monte Carlo ceiling as the stored arrays have them, its page
is docs/leaderboard_classification.md with the kind's headline metrics and the ceilings,
and a release folder with it under classification/ is one baseline of both kinds, whose
findings page `udora release claims` writes."""

from __future__ import annotations

import json
import shutil

import pytest
from tiny_presets import tiny_classification_preset

from udora.experiments.publish.artefact import build_release, load_baseline
from udora.experiments.publish.page import write_page


@pytest.mark.slow  # builds the tiny task's sampled oracle (~15 s) and runs 5 methods
def test_a_classification_release_and_its_page(tmp_path, monkeypatch):
    from udora.experiments.grid.bench import make_grid, run_grid

    monkeypatch.setenv("UDORA_TASK_CACHE", str(tmp_path / "cache"))
    _, data = tiny_classification_preset(tmp_path)
    preset = str(tmp_path / "tinycls.yaml")
    methods = ["blr_logistic", "catboost_ps", "nn_ensemble", "edl", "gp_approx"]
    runs = make_grid([preset], methods, [0], quick=True, data_dir=data)
    run_grid(runs, tmp_path / "res", data_dir=data)
    build_release([tmp_path / "res"], tmp_path / "rel")
    manifest = json.loads((tmp_path / "rel" / "manifest.json").read_text())
    (record,) = (tmp_path / "res" / "oracle").glob("*.json")
    stored = json.loads(record.read_text())
    (oracle,) = manifest["oracles"].values()
    assert oracle["sha256"] == stored["sha256"] and oracle["preset"] == "tinycls"
    split = stored["meta"]["diagnostics"]["split_half_spearman"]
    assert oracle["split_half_spearman"] == split
    # the drawn pool's class balance, counted here from the stored labels
    import numpy as np

    with np.load(record.with_suffix(".npz")) as arrays:
        labels = arrays["y"]
    shares = [float(np.mean(labels == c)) for c in range(3)]
    assert oracle["class_shares"] == pytest.approx(shares, abs=1e-6) and len(shares) == 3
    found = (tmp_path / "res").glob("tinycls/nn_ensemble/*/seed-0/result.json")
    run = json.loads(next(found).read_text())
    assert run["oracle_sha256"] == oracle["sha256"]
    page = write_page(tmp_path / "rel", tmp_path / "docs", "udora release page rel --docs docs")
    text = page.read_text()
    assert page.name == "leaderboard_classification.md"
    assert text.startswith("# The udora classification release")
    head = "| config | family | kl_mean | spearman_au | spearman_eu | spearman_total | accuracy |"
    assert head in text
    au, mi = split["au_entropy"], split["mutual_information"]
    assert f"| tinycls | 0 | {au:.3f} | {mi:.3f} |" in text
    assert f"| {max(shares):.3f} | {oracle['sha256'][:12]} |" in text
    # a regression release folder with this one under classification/: one baseline
    both = tmp_path / "both"
    shutil.copytree(tmp_path / "rel", both / "classification")
    (tmp_path / "reg").mkdir()
    from tiny_presets import one_tiny_preset

    from udora.experiments.run.execute import run_one

    path, reg_data = one_tiny_preset(tmp_path / "reg")
    run_one(path, "blr", 0, {}, tmp_path / "regres", data_dir=reg_data)
    build_release([tmp_path / "regres"], both)
    table = load_baseline(both)
    assert set(table["kind"]) == {"regression", "classification"}
    # its findings page: `udora release claims` on the classification folder writes
    # classification.md, its first question reading the regression release around it
    from typer.testing import CliRunner

    from udora.experiments.cli.main import app

    docs = tmp_path / "cdocs"
    args = ["release", "claims", str(both / "classification"), "--docs", str(docs)]
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 0, out.output
    text = (docs / "classification.md").read_text()
    assert text.startswith("# Classification: findings")
    assert f"udora release claims {both / 'classification'}" in text
    assert "## Answers" in text and "INCOMPLETE" in text  # 5 methods on one preset
    assert not (docs / "paper_reproduction.md").exists()
