"""Every scalar metric udora reports, each declared once (docs/design.md, "Where do I add
...": a metric; the formulas are in docs/metrics.md).

The scorer's keys (:func:`udora.scoring.score`), the rankings, the leaderboard's and
report.md's columns, the meta-evaluation's goodness and the metrics each total-only
prediction form gets all read :data:`METRICS`; tests check that the scorer and
docs/metrics.md name exactly these. The families the scorer fills in loops (a statistic
per uncertainty kind, a coverage per level) are declared by the small generators below,
so every concrete name is in :data:`METRICS`.
"""

from __future__ import annotations

from collections.abc import Iterator

from udora.oracle.joint import DESIGNS
from udora.scoring.declaration import Metric, Need, Role, TaskKind
from udora.scoring.proper import COVERAGE_LEVELS, INTERVAL_SCORE_LEVELS

# The estimates compared with an oracle target: label and what each reads of a prediction.
_KINDS: dict[str, tuple[str, frozenset[Need]]] = {
    "au": ("AU", frozenset({"split"})),
    "eu": ("EU", frozenset({"mean", "split"})),
    "eu_var": ("EU variance part", frozenset({"split"})),
    "eu_bias": ("EU bias part", frozenset({"mean", "split"})),
    "total": ("total", frozenset({"mean", "total"})),
}
# Of the total: the rank-based metrics need only the order of the points by it.
_ORDER = frozenset({"mean", "total_order"})
_LOSSES = {"crps": "CRPS", "nll": "NLL"}
_ORACLE: frozenset[Need] = frozenset({"oracle"})
# Metrics whose meaning is the same for a classification task, against its own targets
# (log-loss scale; docs/metrics.md, "Classification"): declared once, here, for both
# kinds. The classification-only metrics are declared by udora.scoring.classification.
_SHARED = frozenset(
    {"spearman_au", "spearman_eu", "spearman_total", "nAURC_eu", "nAURC_total", "nll"}
    | {f"calib_{s}log_ratio_{k}" for s in ("", "abs_") for k in ("au", "eu", "total")}
)


def _tasks(name: str) -> frozenset[TaskKind]:
    return frozenset({"regression", "classification"} if name in _SHARED else {"regression"})


_GAUSSIAN: frozenset[Need] = frozenset({"outcomes", "mean", "gaussian"})
_MEMBERS: frozenset[Need] = frozenset({"outcomes", "members"})
# The roles of generated metrics, {name: {role: position}}; position 0 comes first.
_ROLES: dict[str, dict[Role, int]] = {
    "spearman_eu": {
        "ranked": 0,
        "leaderboard": 2,
        "headline": 2,
        "oracle": 0,
        "tuning": 0,
        "console": 2,
        "ablation": 2,
    },
    "spearman_au": {
        "ranked": 1,
        "leaderboard": 1,
        "headline": 1,
        "oracle": 1,
        "tuning": 1,
        "console": 1,
        "ablation": 1,
    },
    "spearman_mean_f": {"ranked": 2, "leaderboard": 0, "headline": 0, "console": 0, "ablation": 0},
    "spearman_total": {
        "ranked": 3,
        "leaderboard": 3,
        "headline": 3,
        "oracle": 2,
        "tuning": 2,
        "console": 3,
    },
    "scale_ratio_eu": {"tuning": 3},
    "nAURC_eu": {"leaderboard": 4, "oracle": 3},
    "nAURC_total": {"oracle": 4},
    "coverage_50": {"observable": 3},
    "coverage_90": {"observable": 4},
    "coverage_95": {"observable": 5},
    "interval_score_50": {"observable": 6},
    "interval_score_90": {"observable": 7},
    "interval_score_95": {"observable": 8},
}


def _needs(kind: str, rank_based: bool) -> frozenset[Need]:
    reads = _KINDS[kind][1]
    return _ORACLE | (_ORDER if rank_based and kind == "total" else reads)


def _correlation_needs(kind: str, rank_based: bool) -> frozenset[Need]:
    """A correlation with an estimate is undefined when the estimate is the same at every
    point; of the split's parts only the AU is constant by design (a homoscedastic method)."""
    return _needs(kind, rank_based) | ({"varying_au"} if kind == "au" else set())


def _rho(name: str, what: str) -> Metric:
    """A Spearman correlation of an estimate with its oracle target."""
    kind = name.removeprefix("spearman_")
    return Metric(
        name,
        f"{what} Spearman",
        "1",
        "higher",
        _correlation_needs(kind, True),
        tasks=_tasks(name),
        roles=_ROLES.get(name, {}),
        header=f"{what} ρ",
    )


def _mean_agreement() -> Iterator[Metric]:
    """The predictive mean against f and against the posterior mean."""
    for ref, of in (("f", "f"), ("post", "the posterior mean")):
        needs = _ORACLE | {"mean"}
        for stat, label in (("spearman", "Spearman"), ("pearson", "Pearson")):
            name = f"{stat}_mean_{ref}"
            header = f"mean vs {ref} ρ" if stat == "spearman" else None
            yield Metric(
                name,
                f"{label} of the mean vs {of}",
                "1",
                "higher",
                needs,
                roles=_ROLES.get(name, {}),
                header=header,
            )
        yield Metric(f"mse_mean_{ref}", f"MSE of the mean vs {of}", "target^2", "lower", needs)


def _agreement() -> Iterator[Metric]:
    """Each estimate against its squared-error target, then against the CRPS and NLL
    targets (docs/metrics.md, "Agreement with the oracle")."""
    for kind, (what, _) in _KINDS.items():
        needs = _needs(kind, False)
        yield _rho(f"spearman_{kind}", what)
        pearson_needs = _correlation_needs(kind, False)
        yield Metric(f"pearson_{kind}", f"{what} Pearson", "1", "higher", pearson_needs)
        yield Metric(f"mse_{kind}", f"{what} MSE", "target^4", "lower", needs)
        name = f"scale_ratio_{kind}"
        yield Metric(
            name,
            f"{what} scale ratio",
            "1",
            "closest",
            needs,
            ideal=1.0,
            log=True,
            roles=_ROLES.get(name, {}),
        )
    for loss, of in _LOSSES.items():
        for kind in ("eu", "eu_var", "eu_bias", "total"):
            what = _KINDS[kind][0]
            # a CRPS or NLL risk of the total reads the whole Gaussian predictive
            needs = _ORACLE | {"mean", "gaussian"} if kind == "total" else _needs(kind, False)
            for stat, label in (("spearman", "Spearman"), ("pearson", "Pearson")):
                yield Metric(
                    f"{stat}_{kind}_{loss}", f"{what} {label} ({of} target)", "1", "higher", needs
                )


def _calibration_and_risk_coverage() -> Iterator[Metric]:
    """Binned calibration, AURC and nAURC (docs/metrics.md, "Uncertainty calibration",
    "Risk-coverage")."""
    for kind in ("au", "eu", "total"):
        what, needs = _KINDS[kind][0], _needs(kind, False)
        name = f"calib_abs_log_ratio_{kind}"
        yield Metric(
            name, f"{what} calibration abs log ratio", "1", "lower", needs, tasks=_tasks(name)
        )
        name = f"calib_log_ratio_{kind}"
        yield Metric(
            name,
            f"{what} calibration log ratio",
            "1",
            "closest",
            needs,
            ideal=0.0,
            tasks=_tasks(name),
        )
        # the AURC is rank-based too, but the total-only forms with only an order (the
        # quantiles) have never been given it: docs/evaluate_any_model.md
        yield Metric(f"aurc_{kind}", f"{what} AURC", "target^2", "lower", needs)
        name = f"nAURC_{kind}"
        yield Metric(
            name,
            f"{what} nAURC",
            "1",
            "higher",
            _needs(kind, True),
            tasks=_tasks(name),
            roles=_ROLES.get(name, {}),
        )
    for loss, of in _LOSSES.items():
        for kind in ("eu", "total"):
            needs = _ORACLE | {"mean", "gaussian"} if kind == "total" else _needs(kind, True)
            yield Metric(
                f"nAURC_{kind}_{loss}",
                f"{_KINDS[kind][0]} nAURC ({of} target)",
                "1",
                "higher",
                needs,
            )


def _observable() -> Iterator[Metric]:
    """The proper scores and realised risk-coverage on the realised outcomes
    (docs/metrics.md, "Proper scores on realised outcomes")."""
    yield Metric(
        "nll",
        "NLL",
        "nats",
        "lower",
        _GAUSSIAN,
        tasks=_tasks("nll"),
        roles={"ranked": 4, "leaderboard": 5, "observable": 0, "tuning": 4, "console": 4},
    )
    yield Metric(
        "crps",
        "CRPS",
        "target",
        "lower",
        _GAUSSIAN,
        roles={"ranked": 5, "leaderboard": 6, "observable": 1, "console": 5},
    )
    for level in COVERAGE_LEVELS:
        pct = round(100 * level)
        name = f"coverage_{pct}"
        yield Metric(
            name,
            f"{pct}% interval coverage",
            "1",
            "closest",
            _GAUSSIAN,
            ideal=level,
            roles=_ROLES.get(name, {}),
            goodness_name=f"coverage_error_{pct}",
        )
    yield Metric(
        "miscal_area", "PIT miscalibration area", "1", "lower", _GAUSSIAN, roles={"observable": 2}
    )
    for level in INTERVAL_SCORE_LEVELS:
        name = f"interval_score_{round(100 * level)}"
        yield Metric(
            name,
            f"{round(100 * level)}% interval score",
            "target",
            "lower",
            _GAUSSIAN,
            roles=_ROLES.get(name, {}),
        )
    for kind, position in (("eu", 9), ("total", 10)):
        what = _KINDS[kind][0]
        yield Metric(
            f"nAURC_{kind}_realised",
            f"{what} nAURC (realised error)",
            "1",
            "higher",
            _needs(kind, True) - _ORACLE | {"outcomes"},
            roles={"observable": position},
        )


def _ensemble() -> Iterator[Metric]:
    """Scores of the member means (docs/metrics.md, "Ensembles"); NaN without members."""
    yield Metric(
        "crps_fair",
        "fair CRPS of the members",
        "target",
        "lower",
        _MEMBERS,
        roles={"observable": 13},
    )
    # the spread is compared with y's error after adding the predicted noise a
    yield Metric(
        "spread_skill",
        "spread-skill ratio",
        "1",
        "closest",
        _MEMBERS | {"split"},
        ideal=1.0,
        log=True,
        roles={"observable": 14},
    )
    yield Metric(
        "spread_skill_f",
        "spread-skill ratio vs f",
        "1",
        "closest",
        _ORACLE | {"members"},
        ideal=1.0,
        log=True,
    )
    yield Metric(
        "err_spread_spearman",
        "error-spread Spearman",
        "1",
        "higher",
        _MEMBERS,
        roles={"observable": 15},
    )
    yield Metric("top_decile_err_ratio", "top-decile error ratio", "1", "higher", _MEMBERS)


def _utilities() -> Iterator[Metric]:
    """The prior-weighted utilities, realised and in oracle form (docs/metrics.md,
    "Prior-weighted utilities"). They read only the mean and the total's values, but the
    total-only forms give them to a Gaussian predictive alone (docs/evaluate_any_model.md)."""
    oracle = _ORACLE | {"mean", "gaussian"}
    yield Metric(
        "util_selective",
        "selective utility",
        "target^2",
        "lower",
        _GAUSSIAN,
        roles={"observable": 11},
    )
    yield Metric(
        "util_topk", "top-k utility", "target", "lower", _GAUSSIAN, roles={"observable": 12}
    )
    yield Metric(
        "util_selective_oracle",
        "selective utility (oracle form)",
        "target^2",
        "lower",
        oracle,
        roles={"oracle": 5},
    )
    yield Metric(
        "util_topk_oracle",
        "top-k utility (oracle form)",
        "target",
        "lower",
        oracle,
        roles={"oracle": 6},
    )


def _blocks() -> Iterator[Metric]:
    """The multivariate scores over blocks of nearby points: ``udora meta`` computes them
    from the covariates (docs/metrics.md, "Observable against oracle rankings")."""
    needs = _MEMBERS | {"split", "joint"}  # members plus the noise a: a joint sample
    yield Metric(
        "energy_score_block",
        "block energy score",
        "target",
        "lower",
        needs,
        roles={"observable": 16},
    )
    yield Metric(
        "variogram_score_block",
        "block variogram score",
        "target",
        "lower",
        needs,
        roles={"observable": 17},
    )


def _joint() -> Iterator[Metric]:
    """The joint predictive over the task's batches against the posterior's
    (docs/metrics.md, "Joint predictions"); NaN for a predictive without a covariance."""
    needs = _ORACLE | {"mean", "split", "covariance"}
    for design in DESIGNS:
        yield Metric(
            f"joint_excess_{design}",
            f"joint excess ({design} batches)",
            "nats",
            "lower",
            needs,
        )
        yield Metric(
            f"joint_share_{design}",
            f"share of the total correlation ({design} batches)",
            "1",
            "higher",
            needs,
        )


def _acquisition() -> Iterator[Metric]:
    """A method's choice of where to label against the exact values (docs/metrics.md,
    "Acquisition"); computed by udora.scoring.acquisition when asked for."""
    from udora.oracle.acquisition import VALUES
    from udora.scoring.acquisition import BATCH_VALUES, SCORES

    needs = _ORACLE | {"split", "acquisition"}
    label = {"eu": "largest EU", "bald": "its BALD"}
    for score in SCORES:
        for value in VALUES:
            yield Metric(
                f"acq_spearman_{score}_{value}",
                f"{label[score]} vs exact {value.replace('_', ' ')} Spearman",
                "1",
                "higher",
                needs,
            )
    for score in SCORES:
        for value in BATCH_VALUES:
            yield Metric(
                f"acq_batch_{score}_{value}",
                f"top-k by {label[score]}: share of the greedy {value.replace('_', ' ')}",
                "1",
                "higher",
                needs,
            )


METRICS: tuple[Metric, ...] = (
    *_mean_agreement(),
    *_agreement(),
    *_calibration_and_risk_coverage(),
    *_observable(),
    *_ensemble(),
    *_utilities(),
    *_blocks(),
    *_joint(),
    *_acquisition(),
)
_BY_NAME = {m.name: m for m in METRICS}
_ADDED: dict[str, Metric] = {}  # declared by another task kind's module (register_metric)


def register_metric(declared: Metric) -> Metric:
    """Declare a metric of another task kind (docs/design.md, "Task kinds"): the kind's
    module calls this for each of its metrics, so no regression file lists them. A name
    is declared once: a second, different declaration is an error."""
    known = _BY_NAME.get(declared.name) or _ADDED.get(declared.name)
    if known is not None and known != declared:
        raise ValueError(f"metric {declared.name!r} is already declared")
    _ADDED[declared.name] = declared
    return declared


def unregister_metric(name: str) -> None:
    """Drop a metric declared by :func:`register_metric` (tests of a kind of their own)."""
    _ADDED.pop(name, None)


def _all() -> tuple[Metric, ...]:
    return (*METRICS, *_ADDED.values())


def metric(name: str) -> Metric:
    """The declared metric ``name``; an unknown name raises KeyError listing the known."""
    try:
        return _BY_NAME.get(name) or _ADDED[name]
    except KeyError:
        known = ", ".join(m.name for m in _all())
        raise KeyError(f"unknown metric {name!r}; known: {known}") from None


def metrics(task: TaskKind = "regression", role: Role | None = None) -> tuple[Metric, ...]:
    """The metrics of a task kind, in declaration order; with ``role``, only those with
    that role, in its order (the primary ranked metric first)."""
    found = [m for m in _all() if task in m.tasks]
    if role is None:
        return tuple(found)
    return tuple(sorted((m for m in found if role in m.roles), key=lambda m: m.roles[role]))


def names(task: TaskKind = "regression", role: Role | None = None) -> tuple[str, ...]:
    """The names of :func:`metrics`."""
    return tuple(m.name for m in metrics(task, role))


def scored(task: TaskKind = "regression") -> tuple[str, ...]:
    """The names :func:`udora.scoring.score` returns for a task kind: every metric but
    the block scores, which need the covariates, and the acquisition metrics, whose
    oracle is built only when asked for."""
    return tuple(m.name for m in metrics(task) if not {"joint", "acquisition"} & m.needs)
