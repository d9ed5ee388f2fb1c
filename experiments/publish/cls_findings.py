"""The classification release's findings: three questions and the rule that answers each,
written down before the release is scored (docs/classification.md, "Questions and
rules"). Rules are judged on the held-out suite (cls-heldout) unless they name cls-dev.

Every rule reads the release table through :class:`ClaimData` (one config per method,
seed means per preset, intervals by resampling presets) and returns a
:class:`~udora.experiments.publish.claim_data.Verdict`: an answer and the numbers behind
it. The regression release's table is read the same way for the first question.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import kendalltau

from udora.experiments.publish.claim_data import (
    ClaimData,
    Verdict,
    fmt,
    mean_ranks,
    top,
    verdict,
    w_and_friedman,
)
from udora.experiments.publish.claims import _tau

CH, CD = "cls-heldout", "cls-dev"
CLS_NN = (
    *("nn_ensemble", "nn_bagging", "nn_dropout", "laplace", "fsp_laplace", "swag"),
    *("deup", "edl"),
)
RANKED = (*CLS_NN, "blr_logistic", "catboost_ps", "catboost_ve", "ngboost_bag")
# Methods whose EU is a mutual information of members or posterior samples (a Dirichlet's
# for edl); deup's EU is a predicted excess loss.
MI_METHODS = tuple(m for m in RANKED if m != "deup")
# Methods ranked in both releases (references apart), and the declared twins: the linear
# baselines, a conjugate Gaussian model and its logistic counterpart.
SHARED = (*CLS_NN, "catboost_ps", "ngboost_bag")
TWINS = {"blr": "blr_logistic"}
BOOT = 2000


def _gaps(d: ClaimData, suite: str, methods) -> list[str]:
    """The methods a rule on ``suite`` lacks: those with no ok run on some of its presets,
    or all of them when the table has no preset of the suite (nothing to judge on)."""
    return d.missing(suite, methods) if d.presets(suite) else list(methods)


def _all_presets(d: ClaimData, col: str, methods) -> pd.DataFrame:
    """(presets of every suite, methods) seed means of ``col``."""
    suites = sorted(d.table["suite"].unique())
    return pd.concat([d.v(s, col, methods) for s in suites])


def _tau_ci(a: pd.DataFrame, b: pd.DataFrame, seed: int) -> tuple[float, float, float]:
    """Kendall's tau-b between the mean ranks (EU Spearman, higher better) of the same
    methods in two (presets, methods) tables, and its 95 % interval over presets of each
    table resampled independently (:data:`BOOT` draws)."""
    rng = np.random.default_rng(seed)

    def tau(x: np.ndarray, y: np.ndarray) -> float:
        rx, ry = (mean_ranks(pd.DataFrame(z, columns=a.columns)) for z in (x, y))
        return float(kendalltau(rx, ry).statistic)

    x, y = a.to_numpy(), b.to_numpy()
    draws = [
        tau(x[rng.integers(0, len(x), len(x))], y[rng.integers(0, len(y), len(y))])
        for _ in range(BOOT)
    ]
    lo, hi = np.nanpercentile(draws, [2.5, 97.5])
    return tau(x, y), float(lo), float(hi)


def q1(d: ClaimData, regression: ClaimData) -> Verdict:
    """Does the regression ranking carry over? Kendall's tau-b between the two releases'
    mean ranks by EU Spearman over all their presets (both suites), on the methods both
    rank (:data:`SHARED`, the twins :data:`TWINS` paired); "carries over" when the 95 %
    interval lies above 0 and tau >= 0.5, "partly" when it lies above 0 and tau < 0.5,
    "does not carry over" otherwise."""
    reg_names = [*SHARED, *TWINS]
    cls_names = [*SHARED, *TWINS.values()]
    missing = _gaps(d, CH, cls_names) + _gaps(d, CD, cls_names)
    missing += _gaps(regression, "heldout", reg_names) + _gaps(regression, "dev", reg_names)
    if missing:
        return Verdict("INCOMPLETE", f"no run on some preset: {', '.join(sorted(set(missing)))}")
    reg = _all_presets(regression, "spearman_eu", reg_names)
    cls = _all_presets(d, "spearman_eu", cls_names)
    reg.columns = cls.columns  # the twins under the classification name
    tau, lo, hi = _tau_ci(reg.dropna(), cls.dropna(), d.seed)
    answer = (
        "carries over"
        if lo > 0 and tau >= 0.5
        else "partly carries over"
        if lo > 0
        else "does not carry over"
    )
    return Verdict(answer, f"tau {tau:.3f} [{lo:.2f}, {hi:.2f}] over {len(cls_names)} methods")


def q2(d: ClaimData) -> Verdict:
    """Do mutual-information EU estimates track the oracle's EU, and which of its two parts?
    Per MI method on cls-heldout: the mean EU Spearman ("strongly" >= 0.7, "moderately"
    >= 0.4, else "weakly"), and the mean of (Spearman with the MI part - with the
    discrepancy part ``KL(pbar ‖ q)``) with its 95 % interval over presets: "the MI part"
    above 0, "the discrepancy part" below 0, "neither" otherwise. The answer is the
    strength most MI methods reach and the part most of them track."""
    missing = _gaps(d, CH, MI_METHODS)
    if missing:
        return Verdict("INCOMPLETE", f"no run on some preset: {', '.join(missing)}")
    eu = d.M(CH, "spearman_eu", MI_METHODS)
    diff = d.v(CH, "spearman_eu_mi", MI_METHODS) - d.v(CH, "spearman_eu_kl", MI_METHODS)
    strength = eu.apply(
        lambda r: "strongly" if r >= 0.7 else "moderately" if r >= 0.4 else "weakly"
    )
    part = {}
    for m in MI_METHODS:
        lo, hi = d.ci(diff[[m]], lambda x, m=m: x[m].mean())
        part[m] = "the MI part" if lo > 0 else "the discrepancy part" if hi < 0 else "neither"
    counts = pd.Series(part).value_counts()
    most_strength = strength.value_counts().idxmax()
    answer = f"{most_strength}; mostly {counts.idxmax()}"
    details = "; ".join(f"{m} {eu[m]:.2f} ({part[m]})" for m in MI_METHODS)
    return Verdict(answer, details)


# --------------------------------------------------------------------------- question 3


def c2(d: ClaimData) -> Verdict:
    """Methods are far from the oracle: gp_oracle above every ranked method on every
    preset of both suites by EU Spearman; best suite mean <= 0.75; >= 9 of 12 below 0.5;
    median < 0.40."""
    ok_b = True
    for suite in (CH, CD):
        v = d.v(suite, "spearman_eu", (*RANKED, "gp_oracle"))
        ok_b &= bool((v["gp_oracle"].to_numpy()[:, None] > v[list(RANKED)].to_numpy()).all())
    eu = d.M(CH, "spearman_eu", RANKED)
    ok = [ok_b, eu.max() <= 0.75, (eu < 0.5).sum() >= 9, eu.median() < 0.40]
    return Verdict(
        verdict(ok),
        f"gp_oracle above all: {ok_b}; best {eu.idxmax()} {eu.max():.3f}; "
        f"{(eu < 0.5).sum()}/12 below 0.5; median {eu.median():.3f}",
    )


def c3(d: ClaimData) -> Verdict:
    """Ensemble-style NN methods are among the strongest on EU: nn_ensemble and nn_bagging
    in the top 4 of the 12 by mean rank and by mean EU Spearman (PARTIAL: top 6)."""
    v = d.v(CH, "spearman_eu", RANKED)
    r, m = mean_ranks(v), d.M(CH, "spearman_eu", RANKED)
    pair = ("nn_ensemble", "nn_bagging")

    def in_top(k: int) -> bool:
        return all(x in top(-r, k) and x in top(m, k) for x in pair)

    return Verdict(verdict([in_top(4)], in_top(6)), f"mean ranks {fmt(r[list(pair)], 2)}")


def c4(d: ClaimData) -> Verdict:
    """Deep ensembles beat single-network approximations on EU: nn_ensemble's mean EU
    Spearman above each of laplace, swag, edl, deup, and at least as high on >= 4 of 7
    presets."""
    v = d.v(CH, "spearman_eu", RANKED)
    rivals = ("laplace", "swag", "edl", "deup")
    won = {r: int((v["nn_ensemble"] >= v[r]).sum()) for r in rivals}
    m = v.mean(axis=0)
    ok = [all(m["nn_ensemble"] > m[r] for r in rivals), all(w >= 4 for w in won.values())]
    return Verdict(verdict(ok), f"nn_ensemble {m['nn_ensemble']:.3f}; presets won {won}")


def c6(d: ClaimData) -> Verdict:
    """Among NN methods ensembles, dropout, bagging and FSP give the most useful EU
    selective signal, DEUP is weak: >= 3 of {nn_ensemble, nn_dropout, nn_bagging,
    fsp_laplace} in the top 4 of the 8 NN methods by nAURC_eu; deup in the bottom 3."""
    m = d.M(CH, "nAURC_eu", CLS_NN)
    order = top(m, len(CLS_NN))
    picks = {"nn_ensemble", "nn_dropout", "nn_bagging", "fsp_laplace"}
    ok = [len(picks & set(order[:4])) >= 3, "deup" in order[-3:]]
    return Verdict(
        verdict(ok),
        f"top 4 by nAURC_eu: {', '.join(order[:4])}; deup rank {order.index('deup') + 1} of 8",
    )


def c7(d: ClaimData) -> Verdict:
    """EU rankings are moderately preserved across presets, no method reliable everywhere:
    Kendall's W of the 12 by EU Spearman in [0.31, 0.61]; Friedman p < 0.05; no method
    best on more than 4 of 7 presets; every method below 0.35 somewhere."""
    v = d.v(CH, "spearman_eu", RANKED)
    w, p = w_and_friedman(v)
    wins = v.idxmax(axis=1).value_counts()
    ok = [0.31 <= w <= 0.61, p < 0.05, wins.max() <= 4, bool((v.min(axis=0) < 0.35).all())]
    return Verdict(verdict(ok), f"W {w:.3f}, Friedman p {p:.2g}; most wins {wins.max()} of 7")


def c8(d: ClaimData) -> Verdict:
    """AU separates methods less, and less stably, than EU: on the methods whose AU
    Spearman is finite on every preset, W(AU) < W(EU), the mean sd over presets larger
    for AU, and the Friedman p larger for AU."""
    au_set = [m for m in RANKED if d.v(CH, "spearman_au", (m,))[m].notna().all()]
    au, eu = d.v(CH, "spearman_au", au_set), d.v(CH, "spearman_eu", au_set)
    (wa, pa), (we, pe) = w_and_friedman(au), w_and_friedman(eu)
    sd_a, sd_e = au.std(axis=0).mean(), eu.std(axis=0).mean()
    ok = [wa < we, sd_a > sd_e, pa > pe]
    return Verdict(
        verdict(ok),
        f"W AU {wa:.3f} vs EU {we:.3f}; mean sd AU {sd_a:.3f} vs EU {sd_e:.3f}; "
        f"Friedman p AU {pa:.2g} vs EU {pe:.2g} ({len(au_set)} methods)",
    )


def c14(d: ClaimData) -> Verdict:
    """Good proper scores do not imply good disentanglement: per (preset, seed) cell,
    Kendall's tau-b between the 12 ranked by log loss and by EU Spearman, seeds then
    presets averaged: < 0.6 with the bootstrap upper bound < 0.8; the same for Brier."""
    (tn, cn), (tb, cb) = (_tau(d, score, CH, RANKED) for score in ("nll", "brier"))
    ok = [tn < 0.6 and cn[1] < 0.8, tb < 0.6 and cb[1] < 0.8]
    return Verdict(
        verdict(ok),
        f"tau(log loss, EU) {tn:.3f} [{cn[0]:.2f}, {cn[1]:.2f}]; "
        f"tau(Brier, EU) {tb:.3f} [{cb[0]:.2f}, {cb[1]:.2f}]",
    )


@dataclass(frozen=True)
class Carried:
    """One regression conclusion of the source paper (docs/paper_reproduction.md, by its
    id there) and its rule on the classification release."""

    id: str
    check: Callable[[ClaimData], Verdict]

    @property
    def rule(self) -> str:
        return _rule(self.check)


CARRIED = tuple(
    Carried(name.upper(), fn)
    for name, fn in (
        ("c2", c2),
        ("c3", c3),
        ("c4", c4),
        ("c6", c6),
        ("c7", c7),
        ("c8", c8),
        ("c14", c14),
    )
)


def q3(d: ClaimData) -> tuple[Verdict, dict[str, Verdict]]:
    """Which of the source paper's regression conclusions also hold for classification?
    Each of :data:`CARRIED` judged by its rule; the answer lists those that PASS."""
    missing = sorted(set(_gaps(d, CH, RANKED)) | set(_gaps(d, CD, (*RANKED, "gp_oracle"))))
    if missing:
        return Verdict("INCOMPLETE", f"no run on some preset: {', '.join(missing)}"), {}
    verdicts = {c.id: c.check(d) for c in CARRIED}
    held = [k for k, v in verdicts.items() if v.verdict == "PASS"]
    partial = [k for k, v in verdicts.items() if v.verdict == "PARTIAL"]
    answer = f"hold: {', '.join(held) or 'none'}" + (
        f"; partly: {', '.join(partial)}" if partial else ""
    )
    return Verdict(answer, f"{len(held)} of {len(CARRIED)} hold"), verdicts


QUESTIONS = (
    ("Q1", "Does the regression ranking carry over to classification?", q1),
    ("Q2", "Do mutual-information EU estimates track the oracle's EU, and which part?", q2),
    ("Q3", "Which of the source paper's regression conclusions hold for classification?", q3),
)


def _rule(fn: Callable) -> str:
    """A rule's docstring as markdown, its named method sets spelled out."""
    text = " ".join((fn.__doc__ or "").split()).replace("``", "`")
    sets = {
        "SHARED": ("shared", ", ".join(SHARED)),
        "TWINS": ("twins", ", ".join(f"{a} with {b}" for a, b in TWINS.items())),
        "CARRIED": ("conclusions", ", ".join(c.id for c in CARRIED)),
    }
    for name, (word, value) in sets.items():
        text = text.replace(f"the {word} :data:`{name}`", f"{word}: {value}")
        text = text.replace(f":data:`{name}`", f"{word}: {value}")
    return text.replace("MI method", f"MI method ({', '.join(MI_METHODS)})", 1)


def findings_page(
    d: ClaimData | None, regression: ClaimData | None, command: str, provenance: str = ""
) -> str:
    """docs/classification.md: the questions and their rules; with the release tables
    (``d`` classification, ``regression`` the regression release), their answers."""
    lines = [
        "# Classification: findings",
        "",
        f"Generated by `{command}`{provenance}. The questions and the rule that answers each "
        "were committed before the classification release was scored "
        "(`experiments/publish/cls_findings.py`); rules are judged on cls-heldout unless "
        "they name cls-dev, one config per method (its tuned one), seed means per preset, "
        f"95 % intervals by resampling presets ({BOOT} draws, seed 0).",
        "",
        "## Questions and rules",
        "",
        "| question | rule |",
        "|---|---|",
    ]
    for qid, question, fn in QUESTIONS:
        lines.append(f"| {qid}: {question} | {_rule(fn)} |")
    lines += ["", "Q3's conclusions (ids of docs/paper_reproduction.md), each with its rule:", ""]
    lines += ["| id | rule on the classification release |", "|---|---|"]
    lines += [f"| {c.id} | {c.rule} |" for c in CARRIED]
    if d is None:
        lines += ["", "No classification release has been scored by these rules yet."]
        return "\n".join(lines) + "\n"
    lines += ["", "## Answers", "", "| question | answer | our numbers |", "|---|---|---|"]
    answers = {
        "Q1": q1(d, regression) if regression is not None else Verdict("n/a", "no regression"),
        "Q2": q2(d),
    }
    answers["Q3"], carried = q3(d)
    for qid, question, _ in QUESTIONS:
        lines.append(f"| {qid}: {question} | {answers[qid].verdict} | {answers[qid].ours} |")
    lines += ["", "| id | verdict | our numbers |", "|---|---|---|"]
    lines += [f"| {k} | {v.verdict} | {v.ours} |" for k, v in carried.items()]
    return "\n".join(lines) + "\n"


def write_findings(
    release: str | Path, regression: str | Path, docs: str | Path, command: str
) -> Path:
    """Write ``docs/classification.md`` from the classification release folder ``release``
    and the regression release folder ``regression`` (the first question's other table),
    both read only when their checksums match; ``command`` regenerates it."""
    from udora.experiments.publish.artefact import code_line, primary_rows, read_release
    from udora.oracle.atomic import write_text

    table, _, manifest = read_release(release)
    other = read_release(regression)[0]
    provenance = f" from a release of commit {code_line(manifest)}, {manifest['ok']} ok runs"
    page = findings_page(
        ClaimData(primary_rows(table)), ClaimData(primary_rows(other)), command, provenance
    )
    path = Path(docs) / "classification.md"
    write_text(path, page)
    return path


if __name__ == "__main__":  # the rules alone, before a release is scored
    import sys

    from udora.oracle.atomic import write_text

    target = sys.argv[1]
    write_text(target, findings_page(None, None, f"python -m {__spec__.name} {target}"))
