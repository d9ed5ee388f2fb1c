"""Every metric a consumer names is a registered one (udora.scoring.registry), and every
registered role has its consumer: the rankings, the leaderboard and report.md's headline
tables, the meta-evaluation, the external scorer's total-only forms, the tuning trials,
the ablation studies.

The source is read as well as the tables: a string constant in the source folders that
starts like a metric name (a registered name, or its family, followed by ``_``) must be
registered, so a misspelt or retired name in a figure or claim fails here too.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from udora.experiments.meta.taus import OBSERVABLE, ORACLE
from udora.experiments.open.score import TOTAL_METRICS
from udora.experiments.rankings.blocks import LABELS, PRIMARY, RANKED
from udora.experiments.report.site import COLUMNS, PER_PRESET
from udora.experiments.results.summaries import HEADLINE
from udora.experiments.studies.analysis import METRICS
from udora.experiments.tuning.protocol import ORACLE_METRICS
from udora.scoring import registry as reg

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("oracle", "scoring", "methods", "experiments")
# String constants that start like a metric name but are something else.
NOT_METRICS = {
    "spearman_au_eu": "the file name of report.md's AU/EU Spearman figure",
    "spread_skill_ratio": "the function computing spread_skill",
}


def _known() -> set[str]:
    """Every registered name, of every task kind that has a run part."""
    from udora.experiments.tasks.kinds import run_kind_names

    names = {n for kind in run_kind_names() for n in reg.names(kind)}
    return names | {m.goodness_name for m in reg.METRICS if m.goodness_name}


def _metric_like(known: set[str]) -> dict[str, list[str]]:
    """{string: [file:line]} of the source's plain string constants (not f-string parts)
    that start with a registered name or family stem and ``_``, and are not registered."""
    stems = tuple({n.rsplit("_", 1)[0] + "_" for n in known if "_" in n} | {n + "_" for n in known})
    found: dict[str, list[str]] = {}
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text())
            parts = {
                id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values
            }
            for node in ast.walk(tree):
                text = node.value if isinstance(node, ast.Constant) else None
                if (
                    isinstance(text, str)
                    and id(node) not in parts
                    and re.fullmatch(r"[A-Za-z]\w*[A-Za-z0-9]", text)  # a name, not a prefix
                    and text.startswith(stems)
                    and text not in known
                ):
                    where = f"{path.relative_to(ROOT)}:{node.lineno}"
                    found.setdefault(text, []).append(where)
    return found


def test_no_source_names_an_unregistered_metric():
    found = _metric_like(_known())
    assert set(found) == set(NOT_METRICS), {k: v for k, v in found.items() if k not in NOT_METRICS}


def test_a_misspelt_metric_in_the_source_would_be_found():
    """The scan above on a known set without one family finds that family's uses."""
    known = _known() - {"spearman_eu_var", "pearson_eu_var"}
    found = _metric_like(known | {"spearman_eu", "pearson_eu"})
    assert "spearman_eu_var" in found and "spearman_eu_var" not in NOT_METRICS


def test_every_consumer_table_names_registered_metrics_only():
    known = set(reg.names())
    named = {
        "rankings": {m for m, _ in RANKED} | set(LABELS) | {PRIMARY},
        "leaderboard": {k for k, *_ in COLUMNS} - {"time_fit"} | set(PER_PRESET),
        "report.md": set(HEADLINE),
        "ablation": set(METRICS),
        "tuning": set(ORACLE_METRICS),
        "open": {n for form in TOTAL_METRICS.values() for n in form},
    }
    for consumer, names in named.items():
        assert names <= known, (consumer, names - known)
    goodness = {m.goodness_name or m.name for m in reg.METRICS}
    assert set(OBSERVABLE) | set(ORACLE) <= goodness


def test_every_role_has_its_consumer_in_the_registry_s_order():
    assert [m for m, _ in RANKED] == list(reg.names(role="ranked"))
    assert dict(RANKED) == {m.name: m.better for m in reg.metrics(role="ranked")}
    assert [k for k, *_ in COLUMNS] == [*reg.names(role="leaderboard"), "time_fit"]
    assert reg.names(role="headline") == HEADLINE
    assert reg.names(role="tuning") == ORACLE_METRICS
    sides = {"observable": OBSERVABLE, "oracle": ORACLE}
    for role, side in sides.items():
        assert list(side) == [m.goodness_name or m.name for m in reg.metrics(role=role)]
    every = {n for m in reg.METRICS for n in m.roles}
    assert reg.names(role="ablation") == METRICS
    assert every == {"ranked", "leaderboard", "headline", "tuning", "console", "ablation", *sides}


def test_the_total_only_forms_get_what_their_needs_allow():
    """Worked out by hand from docs/evaluate_any_model.md: a quantile form gets the mean's
    six metrics, the three rank-based total ones and its own CRPS."""
    mean = {f"{s}_mean_{r}" for s in ("spearman", "pearson", "mse") for r in ("f", "post")}
    rank = {"spearman_total", "nAURC_total", "nAURC_total_realised"}
    assert set(TOTAL_METRICS["quantiles"]) == mean | rank | {"crps"}
    values = {"pearson_total", "mse_total", "scale_ratio_total", "aurc_total"}
    values |= {"calib_abs_log_ratio_total", "calib_log_ratio_total"}
    assert set(TOTAL_METRICS["samples"]) == mean | rank | values | {"crps"}
    gaussian = set(TOTAL_METRICS["gaussian"])
    assert set(TOTAL_METRICS["samples"]) < gaussian and len(gaussian) == 35
    assert not any({"split", "members"} & reg.metric(n).needs for n in gaussian)


def test_no_metric_label_holds_a_table_separator():
    """Labels stand in markdown tables (rankings, leaderboards): an ASCII pipe would split
    the row's cells."""
    assert [m.name for m in reg.METRICS if "|" in m.label + (m.header or "")] == []
