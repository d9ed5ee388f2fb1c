"""The joint and acquisition findings' rules on synthetic study rows whose answers follow
from how they were made: three methods with covariances whose neighbour shares and
active-learning gains are ordered as their EU Spearman, one diagonal method, and one
method whose largest-EU batches are noisier than its BALD batches."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from udora.experiments.publish.joint_findings import findings_page, j1, j2, j3

SPEARMAN = {"a": 0.8, "d": 0.6, "b": 0.4, "c": 0.2}
SHARE = {"a": 0.9, "d": 0.65, "b": 0.3, "c": np.nan}
GAIN = {"a": 0.3, "d": 0.2, "b": 0.1, "c": 0.05}


def _rows() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    out = []
    for p in range(6):
        for seed in (0, 1):
            for m in SPEARMAN:
                for strategy in ("eu", "bald", "random"):
                    jitter = 0.02 * rng.standard_normal()
                    common = {"preset": f"p{p}", "method": m, "seed": seed, "strategy": strategy}
                    noisy = 1.5 if (m == "a" and strategy == "eu") else 1.0
                    out.append(
                        common
                        | {
                            "round": 0,
                            "status": "ok",
                            "spearman_eu": SPEARMAN[m] + jitter,
                            "joint_share_neighbour": SHARE[m] + jitter,
                            "joint_share_dyadic": SHARE[m],
                            "joint_share_random": SHARE[m] / 2,
                            "tc_neighbour": 2.0,
                            "tc_dyadic": 3.0,
                            "tc_random": 0.1,
                            "risk": 10.0,
                            # exactly equal for every other method: no difference
                            "picked_noise_ratio": noisy + (m == "a") * 0.01 * jitter,
                        }
                    )
                    risk = 9.0 - (10.0 * GAIN[m] if strategy == "eu" else 0.0)
                    out.append(common | {"round": 2, "status": "ok", "risk": risk + jitter})
    return pd.DataFrame(out)


def test_j1_says_which_methods_capture_the_correlations():
    note, table = j1(_rows())
    assert table.loc["a", "answer"] == "captures" and table.loc["d", "answer"] == "captures"
    assert table.loc["b", "answer"] == "partly"
    assert table.loc["c", "answer"].startswith("diagonal")
    assert table.loc["a", "neighbour"] == pytest.approx(0.9, abs=0.02)
    assert "neighbour 2" in note and "random 0.1" in note


def test_j2_finds_the_rankings_agree():
    found = j2(_rows())
    tau, lo, _ = found["joint"]
    assert tau == pytest.approx(1.0) and lo > 0  # a > d > b on both
    tau, lo, _ = found["gain"]
    assert tau == pytest.approx(1.0) and lo > 0


def test_j3_finds_the_method_whose_largest_eu_picks_noisy_points():
    table = j3(_rows())
    assert table.loc["a", "answer"] == "largest EU picks noisier points"
    assert table.loc["a", "difference"] == pytest.approx(0.5, abs=0.02)
    assert (table.drop("a")["answer"] == "no difference shown").all()


@pytest.mark.slow  # the bootstraps again (5 s): in the slow set (CI runs it)
def test_the_page_states_each_answer_and_how_to_regenerate_it():
    page = findings_page(_rows(), "udora acquire ...")
    assert page.count("**predicts**") == 2 and "udora acquire ..." in page
    assert "| c | diagonal (0 by construction) | 0 | 0 | 0 |" in page


@pytest.mark.slow  # seconds each: in the slow set (CI runs it)
def test_the_shipped_findings_regenerate_from_the_shipped_rows():
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    rows_path = root / "docs" / "data" / "joint_and_acquisition" / "acquisition.parquet"
    page = (root / "docs" / "joint_and_acquisition.md").read_text()
    command = (
        "python -m udora.experiments.publish.joint_findings "
        "docs/data/joint_and_acquisition/acquisition.parquet docs/joint_and_acquisition.md"
    )
    rows = pd.read_parquet(rows_path)
    assert len(rows) == 7 * 3 * (12 * 3 + 4) * 4  # presets x seeds x chains x rounds 0-3
    assert (rows["status"] == "ok").all()
    assert page.split("## Findings")[1] == findings_page(rows, command).split("## Findings")[1]
