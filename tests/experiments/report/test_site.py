"""The HTML report's data and ordering, against pandas computed independently (the browser
checks are in test_site_browser.py)."""

import json

import numpy as np
import pandas as pd
import pytest

from udora.experiments.report.safe import json_script
from udora.experiments.report.site import config_page, leaderboard_data, slug
from udora.experiments.results.figures_summary import families, ordered


def _table():
    rng = np.random.default_rng(0)
    rows = []
    methods = {
        "nn_ensemble": 0.5,
        "swag": 0.3,
        "catboost_kgb": 0.4,
        "gp_oracle": 1.0,
        "blr": 0.2,
        "nn_dropout": 0.6,
    }
    for method, level in methods.items():
        for preset, suite in (("p1", "dev"), ("p2", "dev"), ("p3", "heldout")):
            for seed in (0, 1, 2):
                failed = method == "swag" and preset == "p3" and seed == 2
                rows.append(
                    {
                        "preset": preset,
                        "suite": suite,
                        "method": method,
                        "config": method,
                        "seed": seed,
                        "status": "failed" if failed else "ok",
                        "spearman_eu": np.nan if failed else level + rng.normal(0, 0.1),
                        "nll": rng.normal(),
                        "time_fit": rng.uniform(1, 2),
                    }
                )
    return pd.DataFrame(rows)


def test_leaderboard_values_are_per_preset_seed_means_of_ok_runs():
    table = _table()
    data = leaderboard_data(table)
    ok = table[table["status"] == "ok"]
    expected = ok.groupby(["config", "preset"])[["spearman_eu", "nll", "time_fit"]].mean()
    for row in data["rows"]:
        for preset, values in row["values"].items():
            for key in ("spearman_eu", "nll", "time_fit"):
                assert values[key] == expected.loc[(row["config"], preset), key]
        runs = table[table["config"] == row["config"]]
        for preset, (n, failed) in row["counts"].items():
            part = runs[runs["preset"] == preset]
            assert n == len(part) == 3 and failed == int((part["status"] != "ok").sum())
        assert sum(f for _, f in row["counts"].values()) == (row["config"] == "swag")
    assert {c["key"] for c in data["columns"]} == {"spearman_eu", "nll", "time_fit"}
    assert [(p["name"], p["suite"]) for p in data["presets"]] == [
        ("p1", "dev"),
        ("p2", "dev"),
        ("p3", "heldout"),
    ]


def test_configs_are_grouped_by_family_best_first_with_the_references_last():
    table = _table()
    fam = families(table)
    assert fam["gp_oracle"] == "GP reference" and fam["swag"] == "Bayesian NN"
    order = ordered(table, "spearman_eu")
    assert order[-1] == "gp_oracle"  # the best EU of all, shown apart at the end
    mean = table.groupby(["config", "preset"])["spearman_eu"].mean().groupby("config").mean()
    nn = [c for c in order if fam[c] == "NN"]
    assert nn == sorted(nn, key=lambda c: -mean[c])
    assert order.index("nn_dropout") < order.index("swag") < order.index("catboost_kgb")


def test_embedded_json_cannot_close_its_script_and_names_make_safe_unique_files():
    text = json_script("d", {"config": "m[x=</script><b>]"})
    assert "</script><b>" not in text.split(">", 1)[1].rsplit("</script>", 1)[0]
    payload = text.split(">", 1)[1].rsplit("</script>", 1)[0]
    assert json.loads(payload) == {"config": "m[x=</script><b>]"}
    assert slug("nn[width=64]") != slug("nn[width-64]")
    assert config_page("a/b c").startswith("method-a-b-c-") and "/" not in config_page("a/b")


@pytest.mark.slow  # seconds each: in the slow set (CI runs it)
def test_a_second_report_removes_the_pages_the_first_wrote_and_it_does_not(tmp_path):
    from udora.experiments.report.pages import write_site

    table = _table().assign(run_dir=str(tmp_path / "nowhere"), error=None)
    write_site(table, {}, tmp_path, {"meta": "## Meta-evaluation\n\ntext"}, {})
    gone = tmp_path / config_page("swag")
    assert gone.is_file() and (tmp_path / "meta.html").is_file()
    assert "result.json unreadable" in gone.read_text()  # said on the page, not raised
    write_site(table[table["config"] != "swag"], {}, tmp_path, {}, {})
    assert not gone.exists() and not (tmp_path / "meta.html").exists()
    assert (tmp_path / config_page("blr")).is_file() and (tmp_path / "index.html").is_file()
    assert 'href="meta.html"' not in (tmp_path / "index.html").read_text()
