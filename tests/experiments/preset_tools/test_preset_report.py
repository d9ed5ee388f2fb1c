"""The three sigma_f medians of `udora presets show` and the within-x1.5 counts."""

import numpy as np
import pytest

from udora.experiments.preset_tools.compare import sigma_f_medians, within_counts


def test_sigma_f_three_ways_on_a_bimodal_posterior():
    rng = np.random.default_rng(0)
    N, train = 1000, np.array([3, 3, 7, 10, 500, 999, 999])  # repeats count once
    sd = rng.uniform(2.0, 3.0, size=N)  # away from the data
    unique = np.unique(train)
    sd[unique] = rng.uniform(0.1, 0.2, size=unique.size)  # at the training inputs
    got = sigma_f_medians(sd**2, train)
    away = np.setdiff1d(np.arange(N), unique)
    assert got["train"] == np.median(sd[unique])
    assert got["away"] == np.median(sd[away])
    assert got["pool"] == np.median(sd)
    assert got["train"] < 0.2 < 2.0 < got["away"]


def test_within_counts_use_the_closed_factor_interval():
    rows = [
        {"ratio train": "1.50", "ratio pool": "0.66", "ratio away": "-"},
        {"ratio train": "0.67", "ratio pool": "1.51", "ratio away": "3.00"},
        {"ratio train": "2.85", "ratio pool": "1.00", "ratio away": "1.00"},
    ]
    assert within_counts(rows) == {"train": 2, "pool": 1, "away": 1}


@pytest.mark.slow  # an end-to-end run of ~10 s (the default set stays under 4 minutes)
def test_paper_variant_row_sits_next_to_the_free_fit(shared_data):
    """protein's kernel=paper row: both mll per point, sigma_f three ways, both train ratios."""
    from udora.experiments.preset_tools.compare import (
        PAPER_COLUMNS,
        paper_markdown_table,
        paper_variant_row,
    )
    from udora.oracle.preset import load_preset

    p = load_preset("protein")
    row = paper_variant_row(p, 0, shared_data)
    assert row["free mll/pt"] == f"{p.fit['mll_per_point']:.4f}"
    assert row["paper-constrained mll/pt"] == f"{p.fit_paper['mll_per_point']:.4f}"
    ratio = float(row["sigma_f train"]) / p.paper["median_sigma_f"]
    assert float(row["ratio train"]) == pytest.approx(ratio, abs=0.006)
    assert row["ratio train free"] != "-" and "--paper --write" in row["command"]
    table = paper_markdown_table([row])
    assert table.splitlines()[0] == "| " + " | ".join(PAPER_COLUMNS) + " |"
    assert table.count("\n") == 3


def test_paper_variant_row_needs_a_kernel_paper():
    from udora.experiments.preset_tools.compare import paper_variant_row

    with pytest.raises(ValueError, match="no kernel_paper block"):
        paper_variant_row("concrete")
