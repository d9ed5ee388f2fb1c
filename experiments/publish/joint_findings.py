"""What epistemic uncertainty is for: the findings of the active-learning study's rows
(docs/joint_and_acquisition.md), three questions and the rule that answers each, written
down before the study was run.

The rows are ``udora acquire``'s (:mod:`udora.experiments.acquisition.study`): one per
chain and round, with the round's run metrics (EU Spearman, the joint metrics), the
posterior risk on the evaluation set, round 0's acquisition metrics and the noise of the
points each round chose. Every statistic is a mean over presets of seed means, with a 95 %
interval from resampling presets (:data:`BOOT` draws, a fixed seed).

- **J1 (joint)**: which methods' joint predictives capture the posterior's correlations?
  Per method with a covariance, the mean share of the total correlation on the neighbour
  batches (round 0): "captures" when its interval lies above 0.5, "partly" when above 0,
  "no" otherwise. The dyadic and random shares and each design's mean total correlation
  are shown beside it; diagonal methods capture none by construction (the zero line).
- **J2 (does the pointwise ranking predict the rest?)**: Kendall's tau-b between the
  methods' mean ranks by EU Spearman (round 0) and (a) by the neighbour share, among
  methods with a covariance, (b) by the active-learning gain of choosing by their own EU:
  ``(risk_random - risk_eu) / risk_round0`` at the last round. "Predicts" when the
  interval lies above 0.
- **J3 (noisy points)**: which methods pick noisy points? Per method, the noise of the
  first batch chosen by largest EU and by the method's BALD, each over the candidates'
  (``picked_noise_ratio`` at round 0), and their difference: "largest EU picks noisier
  points" when the difference's interval lies above 0.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import kendalltau, rankdata

from udora.oracle.joint import DESIGNS

BOOT = 2000


def seed_means(rows: pd.DataFrame, col: str, strategy: str | None, round_: int) -> pd.DataFrame:
    """(presets, methods) means over seeds of ``col`` at round ``round_`` (of one strategy,
    or of round 0's shared runs when ``strategy`` is None)."""
    r = rows[(rows["round"] == round_) & (rows["status"] == "ok")]
    if strategy is not None:
        r = r[r["strategy"] == strategy]
    else:  # round 0 is one run per (preset, method, seed), repeated in each chain's row
        r = r.drop_duplicates(["preset", "method", "seed"])
    return r.groupby(["preset", "method"])[col].mean().unstack("method")


def boot(
    values: np.ndarray, stat: Callable[[np.ndarray], float], seed: int = 0
) -> tuple[float, float, float]:
    """``stat`` of a (presets, ...) array and its 95 % interval over resampled presets.
    On numpy arrays, not :class:`~udora.experiments.publish.claim_data.ClaimData`'s
    release tables: the study's rows are not a release table, and 2000 draws of a pandas
    statistic take tens of seconds."""
    rng = np.random.default_rng(seed)
    n = len(values)
    draws = [stat(values[rng.integers(0, n, n)]) for _ in range(BOOT)]
    lo, hi = np.nanpercentile(draws, [2.5, 97.5])
    return float(stat(values)), float(lo), float(hi)


def _mean_ranks(v: np.ndarray) -> np.ndarray:
    """Mean rank of each column over the rows (presets), 1 the highest value."""
    return np.mean(rankdata(-v, axis=1), axis=0)


def _fmt(x: float) -> str:
    return "n/a" if not np.isfinite(x) else f"{x:+.3f}" if abs(x) < 10 else f"{x:.3g}"


def j1(rows: pd.DataFrame) -> tuple[str, pd.DataFrame]:
    """Rule J1 (module doc): the per-method answer and the table behind it."""
    shares = {d: seed_means(rows, f"joint_share_{d}", None, 0) for d in DESIGNS}
    tc = {d: seed_means(rows, f"tc_{d}", None, 0).mean(axis=1) for d in DESIGNS}
    out = []
    for method in shares["neighbour"].columns:
        col = shares["neighbour"][[method]].dropna()
        if col.empty:
            out.append({"method": method, "answer": "diagonal (0 by construction)"})
            continue
        mean, lo, hi = boot(col.to_numpy()[:, 0], np.mean)
        answer = "captures" if lo > 0.5 else "partly" if lo > 0 else "no"
        row = {"method": method, "answer": answer, "neighbour": mean, "lo": lo, "hi": hi}
        for d in ("dyadic", "random"):
            row[d] = float(shares[d][method].mean())
        out.append(row)
    table = pd.DataFrame(out).set_index("method")
    summary = ", ".join(f"{d} {float(tc[d].mean()):.3g}" for d in DESIGNS)
    return f"mean total correlation per batch (nats): {summary}", table


def _tau_boot(a: pd.DataFrame, b: pd.DataFrame) -> tuple[float, float, float]:
    """Kendall's tau-b between the mean ranks of the same methods in two (presets, methods)
    tables over the same presets, with its interval over resampled presets."""
    cols = [m for m in a.columns if m in b.columns]
    both = pd.concat({"a": a[cols], "b": b[cols]}, axis=1).dropna().to_numpy()
    k = len(cols)

    def stat(t: np.ndarray) -> float:
        return float(kendalltau(_mean_ranks(t[:, :k]), _mean_ranks(t[:, k:])).statistic)

    return boot(both, stat)


def j2(rows: pd.DataFrame) -> dict[str, tuple[float, float, float]]:
    """Rule J2 (module doc): ``{"joint": (tau, lo, hi), "gain": (tau, lo, hi)}``."""
    eu = seed_means(rows, "spearman_eu", None, 0)
    share = seed_means(rows, "joint_share_neighbour", None, 0).dropna(axis=1, how="all")
    last = int(rows["round"].max())
    risk0 = seed_means(rows, "risk", None, 0)
    gain = (seed_means(rows, "risk", "random", last) - seed_means(rows, "risk", "eu", last)) / risk0
    return {"joint": _tau_boot(eu, share), "gain": _tau_boot(eu, gain)}


def j3(rows: pd.DataFrame) -> pd.DataFrame:
    """Rule J3 (module doc): per method the first batch's noise ratio by largest EU and by
    BALD, the difference with its interval, and the answer (empty without a second round)."""
    if "picked_noise_ratio" not in rows:
        return pd.DataFrame(columns=["eu", "bald", "difference", "lo", "hi", "answer"])
    eu = seed_means(rows, "picked_noise_ratio", "eu", 0)
    bald = seed_means(rows, "picked_noise_ratio", "bald", 0)
    out = []
    for method in eu.columns:
        diff = (eu[method] - bald[method]).dropna().to_numpy()
        mean, lo, hi = boot(diff, np.mean)
        answer = "largest EU picks noisier points" if lo > 0 else "no difference shown"
        out.append(
            {
                "method": method,
                "eu": float(eu[method].mean()),
                "bald": float(bald[method].mean()),
                "difference": mean,
                "lo": lo,
                "hi": hi,
                "answer": answer,
            }
        )
    return pd.DataFrame(out).set_index("method")


def findings_page(rows: pd.DataFrame, command: str) -> str:
    """The page's findings section from the rows (``command``: what produced them)."""
    lines = [
        "## Findings",
        "",
        f"From {len(rows)} rows ({rows['preset'].nunique()} presets, seeds "
        f"{sorted(int(s) for s in rows['seed'].unique())}, {rows['method'].nunique()} methods, "
        f"{int(rows['round'].max())} rounds). Regenerate: `{command}`.",
        "",
        "### J1: which methods' joint predictives capture the posterior's correlations?",
        "",
    ]
    tc, t1 = j1(rows)
    lines += [tc + ".", "", "| method | answer | neighbour share [95 % CI] | dyadic | random |"]
    lines.append("|---|---|---|---|---|")
    for m, r in t1.iterrows():
        if "neighbour" not in r or not np.isfinite(r.get("neighbour", np.nan)):
            lines.append(f"| {m} | {r['answer']} | 0 | 0 | 0 |")
            continue
        lines.append(
            f"| {m} | {r['answer']} | {_fmt(r['neighbour'])} [{_fmt(r['lo'])}, "
            f"{_fmt(r['hi'])}] | {_fmt(r['dyadic'])} | {_fmt(r['random'])} |"
        )
    t2 = j2(rows)
    lines += [
        "",
        "### J2: does the pointwise EU ranking predict the joint ranking and the gain?",
        "",
    ]
    for key, what in (("joint", "the neighbour share"), ("gain", "the active-learning gain")):
        tau, lo, hi = t2[key]
        answer = "predicts" if lo > 0 else "does not predict"
        lines.append(
            f"- EU Spearman vs {what}: tau {_fmt(tau)} [{_fmt(lo)}, {_fmt(hi)}]: **{answer}**."
        )
    lines += ["", "### J3: which methods pick noisy points?", ""]
    lines += [
        "| method | noise ratio, largest EU | noise ratio, BALD | difference [95 % CI] | answer |"
    ]
    lines.append("|---|---|---|---|---|")
    for m, r in j3(rows).iterrows():
        lines.append(
            f"| {m} | {r['eu']:.3f} | {r['bald']:.3f} | {_fmt(r['difference'])} "
            f"[{_fmt(r['lo'])}, {_fmt(r['hi'])}] | {r['answer']} |"
        )
    return "\n".join(lines) + "\n"


def write_findings(rows_path: str | Path, page: str | Path, command: str) -> Path:
    """Replace everything from ``## Findings`` on in ``page`` with the findings of the
    rows at ``rows_path``; the page's text before it (the questions) is kept."""
    from udora.oracle.atomic import write_text

    page = Path(page)
    text = page.read_text()
    head = text.split("## Findings")[0].rstrip() + "\n\n"
    return write_text(page, head + findings_page(pd.read_parquet(rows_path), command))


def main(argv: list[str] | None = None) -> None:
    """``python -m udora.experiments.publish.joint_findings ROWS PAGE``."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        raise SystemExit("usage: python -m udora.experiments.publish.joint_findings ROWS PAGE")
    command = f"python -m udora.experiments.publish.joint_findings {args[0]} {args[1]}"
    print(write_findings(args[0], args[1], command))


if __name__ == "__main__":
    main()
