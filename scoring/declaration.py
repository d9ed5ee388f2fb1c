"""What a metric declares: its name, label, unit, better side, needs, task kinds and roles
(docs/design.md, "Where do I add ..."; the formulas are in docs/metrics.md).

A :class:`Metric` is a value; :mod:`udora.scoring.registry` holds every declared one, and
the scorer's keys, the rankings, the leaderboard, the meta-evaluation and the external
scorer read them from there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

# "higher"/"lower": which side is better; "closest": the distance to ``ideal`` is the
# loss (a coverage to its nominal level, a ratio to 1 on a log scale with ``log``).
Better = Literal["higher", "lower", "closest"]
# What computing it reads. Data: "oracle" (the exact targets f, m, s2_f, sigma_eps^2),
# "outcomes" (the realised y), "joint" (the covariates and a joint predictive over blocks
# of nearby points, so not in result.json). The prediction, weakest first: "mean";
# "total_order" (only the order of the total variance); "total" (its values, as the
# variance of a squared error); "gaussian" (the whole predictive: the Gaussian N(mu, v) of
# a regression, the class probabilities of a classification); "split"
# (the AU/EU split); "varying_au" (an AU estimate that is not the same at every point: a
# correlation with it is undefined otherwise, as for a method that declares
# ``aleatoric = "constant"``, docs/adding_a_method.md); "members" (the member means);
# "brier" (a classification method's Brier-scale AU/EU, from members or a closed form);
# "covariance" (a joint predictive over the task's batches: members, or predict_joint);
# "acquisition" (the exact values of labelling each candidate, built only when asked for:
# udora.oracle.acquisition, so not in result.json of a plain run).
Need = Literal[
    "oracle",
    "outcomes",
    "joint",
    "mean",
    "total_order",
    "total",
    "gaussian",
    "split",
    "varying_au",
    "members",
    "brier",
    "covariance",
    "acquisition",
]
# "ranked": ranked with the rankings' statistics (docs/rankings.md); "leaderboard": a
# default column of the HTML leaderboard; "headline": a column of report.md's headline
# tables; "oracle" and "observable": the two sides of the meta-evaluation
# (docs/meta_evaluation.md); "tuning": recorded for every tuning trial; "console": the
# line `udora run` and `udora evaluate` print; "ablation": an ablation study's default
# metrics (docs/ablations.md).
Role = Literal[
    "ranked", "leaderboard", "headline", "oracle", "observable", "tuning", "console", "ablation"
]
TaskKind = str  # a task kind's name (udora.oracle.kinds): "regression", ...
# Units: "1" (scale-free), "target" (the target's units), "target^2", "target^4" (a
# squared variance), "nats" (a log score: depends on the target's scale too).
Unit = Literal["1", "target", "target^2", "target^4", "nats"]


@dataclass(frozen=True)
class Metric:
    """One scalar metric.

    ``roles`` maps each role to the metric's position in it (0 first; the primary ranked
    metric is ``ranked`` 0). ``header`` is the leaderboard's short column header (the label
    by default). ``goodness_name`` names its goodness where the meta-evaluation shows it
    under another name (``coverage_error_50`` for ``coverage_50``).
    """

    name: str
    label: str
    unit: Unit
    better: Better
    needs: frozenset[Need]
    ideal: float | None = None
    log: bool = False
    tasks: frozenset[TaskKind] = frozenset({"regression"})
    roles: dict[Role, int] = field(default_factory=dict)
    header: str | None = None
    goodness_name: str | None = None
    digits: int = 3

    def __post_init__(self) -> None:
        if (self.better == "closest") != (self.ideal is not None):
            raise ValueError(f"{self.name}: an ideal value goes with better='closest' only")
        if self.log and (self.ideal is None or self.ideal <= 0):
            raise ValueError(f"{self.name}: a log scale needs a positive ideal value")

    @property
    def short(self) -> str:
        """The leaderboard's column header."""
        return self.header or self.label

    def goodness(self, values):
        """The metric turned into a goodness, higher is better (docs/meta_evaluation.md):
        the value itself, minus it, or minus its distance to ``ideal`` (of the logs, with
        ``log``). ``values``: an array or a pandas Series, returned of the same kind."""
        if self.better == "higher":
            return values
        if self.better == "lower":
            return -values
        if self.log:
            return -np.abs(np.log(values) - np.log(self.ideal))
        return -np.abs(values - self.ideal)
