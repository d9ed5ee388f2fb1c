"""The source paper's claims (§5, Appendix E, §7) as rules on the release table, written
down before the release was scored (docs/paper_reproduction.md). Each rule returns a
:class:`~udora.experiments.publish.claim_data.Verdict`; suite H (held-out) is where a
rule is judged unless it names D (dev)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import kendalltau

from udora.experiments.publish.claim_data import (
    NN8,
    NONNN,
    P14,
    TREES,
    ClaimData,
    Verdict,
    complete,
    fmt,
    mean_ranks,
    top,
    verdict,
    w_and_friedman,
)

H, D = "heldout", "dev"


def c1(d: ClaimData) -> Verdict:
    f = d.M(H, "spearman_mean_f")
    others = f.drop("blr")
    order = f.sort_values()
    low_ok = order.index[0] == "blr" or (
        order.index[1] == "blr" and f["blr"] - order.iloc[0] <= 0.02
    )
    sd_ratio = d.M(H, "spearman_eu").std() / f.std()
    ok = [
        low_ok,
        others.max() - others.min() <= 0.12,
        others.median() - f["blr"] >= 0.03,
        sd_ratio >= 2,
    ]
    return Verdict(
        verdict(ok),
        f"blr {f['blr']:.3f}; others {others.min():.3f}-"
        f"{others.max():.3f} (median {others.median():.3f}); sd(EU)/sd(mean) "
        f"{sd_ratio:.2f}",
    )


def c2(d: ClaimData) -> Verdict:
    ref = d.table[d.table["method"] == "gp_oracle"]
    floor = float(ref[["spearman_eu", "spearman_au", "spearman_total"]].min().min())
    ok_b = True
    for suite in (H, D):
        v = d.v(suite, "spearman_eu", (*P14, "gp_oracle"))
        ok_b &= bool((v["gp_oracle"].to_numpy()[:, None] > v[list(P14)].to_numpy()).all())
    eu = d.M(H, "spearman_eu")
    ok = [floor >= 0.999, ok_b, eu.max() <= 0.75, (eu < 0.5).sum() >= 10, eu.median() < 0.40]
    return Verdict(
        verdict(ok),
        f"gp_oracle min {floor:.4f}; best P14 {eu.idxmax()} "
        f"{eu.max():.3f}; {(eu < 0.5).sum()}/14 below 0.5; median "
        f"{eu.median():.3f}",
    )


def c3(d: ClaimData) -> Verdict:
    v = d.v(H, "spearman_eu")
    r, m = mean_ranks(v), d.M(H, "spearman_eu")
    pair = ("nn_ensemble", "nn_bagging")

    def in_top(k: int) -> bool:
        return all(x in top(-r, k) and x in top(m, k) for x in pair)

    return Verdict(
        verdict([in_top(4)], in_top(6)),
        f"mean rank {fmt(r[list(pair)], 2)} (top 4: {', '.join(top(-r, 4))})",
    )


def c4(d: ClaimData) -> Verdict:
    v = d.v(H, "spearman_eu")
    rivals = ("laplace", "swag", "edl", "deup")
    ok = [
        (v["nn_ensemble"].mean() > v[m].mean()) and (v["nn_ensemble"] >= v[m]).sum() >= 4
        for m in rivals
    ]
    wins = {m: int((v["nn_ensemble"] >= v[m]).sum()) for m in rivals}
    return Verdict(
        verdict(ok),
        f"nn_ensemble {v['nn_ensemble'].mean():.3f} vs "
        f"{fmt(v[list(rivals)].mean())}; presets won {wins}",
    )


def c5(d: ClaimData) -> Verdict:
    v, eu = d.v(H, "spearman_eu"), d.M(H, "spearman_eu")
    strong = [m for m in TREES if eu[m] >= 0.25 and d.ci(v[[m]], lambda x: x.mean().iloc[0])[0] > 0]
    a = len(strong) >= 3 and all(eu["blr"] < eu[m] for m in TREES)
    n = d.M(H, "nAURC_eu", NONNN)
    b_pass = n.idxmax() == "ngboost_bag"
    b_partial = top(n, 2)[1] == "ngboost_bag" and n.max() - n["ngboost_bag"] <= 0.03
    nv = d.v(H, "nAURC_eu", NONNN)
    c = all(
        n[m] > 0 and d.ci(nv[[m]], lambda x: x.mean().iloc[0])[0] > 0 and n[m] > n["blr"]
        for m in ("catboost_ps", "catboost_kgb")
    )
    return Verdict(
        verdict([a, b_pass, c], a and c and b_partial),
        f"EU >= 0.25 with CI > 0: {strong or 'none'}; nAURC_eu {fmt(n)}",
    )


def c6(d: ClaimData) -> Verdict:
    n = d.M(H, "nAURC_eu", NN8)
    best = top(n, 4)
    four = sum(m in best for m in ("nn_ensemble", "nn_dropout", "nn_bagging", "fsp_laplace"))
    ok = [four >= 3, "deup" in top(n, 3, higher=False)]
    return Verdict(
        verdict(ok),
        f"top 4 by nAURC_eu: {', '.join(best)}; deup rank "
        f"{int(n.rank(ascending=False)['deup'])} of 8",
    )


def c7(d: ClaimData) -> Verdict:
    v = d.v(H, "spearman_eu")
    w, p = w_and_friedman(v)
    best_count = v.idxmax(axis=1).value_counts().max()
    low = (v < 0.35).any(axis=0).all()
    ok = [0.31 <= w <= 0.61, p < 0.05, best_count <= 4 and low]
    return Verdict(
        verdict(ok),
        f"W {w:.3f} (paper 0.46), Friedman p {p:.2g}; most wins by "
        f"one method {best_count} of {len(v)}",
    )


def c8(d: ClaimData) -> Verdict:
    au_set = list(d.au_set)
    va, ve = d.v(H, "spearman_au", au_set), d.v(H, "spearman_eu", au_set)
    (wa, pa), (we, pe) = w_and_friedman(va), w_and_friedman(ve)
    ok = [wa < we, va.std().mean() > ve.std().mean(), pa > pe]
    bnn = [m for m in NN8 if m != "deup"]
    wda, _ = w_and_friedman(d.v(D, "spearman_au", bnn))
    wde, _ = w_and_friedman(d.v(D, "spearman_eu", bnn))
    return Verdict(
        verdict([*ok, wda < wde]),
        f"H: W AU {wa:.3f} vs EU {we:.3f}, Friedman p AU "
        f"{pa:.2g} vs EU {pe:.2g}; D (BNN): 1-W EU {1 - wde:.3f} (paper 0.486), "
        f"AU {1 - wda:.3f} (paper 0.837)",
    )


def c9(d: ClaimData, uninformative: str = "nAURC_au") -> Verdict:
    """``uninformative``: the column bullet b counts below 0.10 ("close to uninformative";
    a metric variant of docs/paper_disagreements.md replaces it)."""
    au_set = list(d.au_set)
    na, ne = d.M(H, "nAURC_au", au_set), d.M(H, "nAURC_eu", au_set)
    a = na.median() < ne.median() and (na < ne).sum() >= 7
    low = d.M(H, uninformative, au_set)
    b = (low < 0.10).sum() >= 2
    nn = [m for m in au_set if m in NN8]
    c = all(m in top(na[nn], 3) for m in ("edl", "swag"))
    trees = [m for m in ("ngboost_bag", "ngboost_nig", "catboost_ps") if m in au_set]
    dd = bool(trees) and na[trees].idxmax() == "ngboost_bag"
    return Verdict(
        verdict([a, b, c, dd], a and b and (c or dd)),
        f"median nAURC AU {na.median():.3f} vs EU {ne.median():.3f}; {uninformative} < 0.10: "
        f"{(low < 0.10).sum()} (smallest {fmt(low.nsmallest(2))}); top 3 NN by AU "
        f"{', '.join(top(na[nn], 3))}",
    )


def c10(d: ClaimData) -> Verdict:
    eu, var, bias = (d.M(H, c) for c in ("spearman_eu", "spearman_eu_var", "spearman_eu_bias"))
    ok = [(var > eu).sum() >= 10, (bias < var).sum() >= 11]
    return Verdict(
        verdict(ok),
        f"var > full EU for {(var > eu).sum()}/14, bias < var for "
        f"{(bias < var).sum()}/14; medians var {var.median():.3f}, bias "
        f"{bias.median():.3f}",
    )


def c11(d: ClaimData) -> Verdict:
    r = d.M(H, "calib_log_ratio_eu")
    a = complete(d.M(H, "calib_abs_log_ratio_eu", NN8), "calib_abs_log_ratio_eu")
    first = a.idxmin() == "edl"
    second = top(a, 2, higher=False)[1] == "edl" and a["edl"] - a.min() <= 0.10
    ok = [(r < 0).sum() >= 9, first]
    return Verdict(
        verdict(ok, (r < 0).sum() >= 9 and second),
        f"{(r < 0).sum()}/14 underestimate EU (median log ratio {r.median():.2f}); "
        f"best NN absolute log ratio {a.idxmin()} {a.min():.2f}, edl {a['edl']:.2f}",
    )


def c12(d: ClaimData) -> Verdict:
    au_set = list(d.au_set)
    r = d.M(H, "calib_log_ratio_au", au_set)
    a = complete(d.M(H, "calib_abs_log_ratio_au", au_set), "calib_abs_log_ratio_au")
    e = complete(d.M(H, "calib_abs_log_ratio_eu", au_set), "calib_abs_log_ratio_eu")
    nn = [m for m in au_set if m in NN8]
    worst = top(a, 2)
    ok = [
        (r > 0).sum() >= 6,
        "ngboost_nig" in au_set and worst[0] == "ngboost_nig",
        "edl" in nn and a[nn].idxmin() == "edl",
        a.median() > e.median(),
    ]
    partial = ok[0] and ok[3] and "ngboost_nig" in worst and "edl" in top(a[nn], 2, higher=False)
    return Verdict(
        verdict(ok, partial),
        f"{(r > 0).sum()}/{len(au_set)} overestimate AU; "
        f"largest absolute log ratio {worst[0]}; best NN {a[nn].idxmin()}; median absolute log "
        f"ratio AU {a.median():.2f} vs EU {e.median():.2f}",
    )


def c13(d: ClaimData) -> Verdict:
    v = d.v(D, "spearman_mean_f", NN8)
    m = float(v.mean(axis=1).mean())
    return Verdict(
        verdict([0.78 <= m <= 0.89]),
        f"NN mean Spearman of the mean vs f on dev {m:.3f} (paper 0.83-0.84)",
    )


def _tau(
    d: ClaimData, score: str, suite: str = H, methods: tuple[str, ...] = P14
) -> tuple[float, tuple[float, float]]:
    """Per (preset, seed) cell of ``suite``, Kendall's tau-b between ``methods`` ranked by
    the loss ``score`` and by EU Spearman; seeds then presets averaged, with the interval
    over presets."""
    t = d.table[(d.table["suite"] == suite) & d.table["method"].isin(methods)]
    per = {}
    for (preset, _seed), cell in t.groupby(["preset", "seed"]):
        cell = cell.dropna(subset=[score, "spearman_eu"])
        if len(cell) >= 4:
            per.setdefault(preset, []).append(kendalltau(-cell[score], cell["spearman_eu"])[0])
    means = pd.DataFrame({"tau": [np.mean(x) for x in per.values()]})
    return float(means["tau"].mean()), d.ci(means, lambda x: x["tau"].mean())


def c14(d: ClaimData) -> Verdict:
    (tn, cn), (tc, cc) = _tau(d, "nll"), _tau(d, "crps")
    ok = [tn < 0.6 and cn[1] < 0.8, tc < 0.6 and cc[1] < 0.8]
    return Verdict(
        verdict(ok),
        f"tau(NLL, EU) {tn:.3f} [{cn[0]:.2f}, {cn[1]:.2f}]; "
        f"tau(CRPS, EU) {tc:.3f} [{cc[0]:.2f}, {cc[1]:.2f}]",
    )


def c15(d: ClaimData) -> Verdict:
    r = mean_ranks(d.v(H, "spearman_eu"))
    picks = ("nn_ensemble", "fsp_laplace", "catboost_kgb")
    within = [all(m in top(-r, k) for m in picks) for k in (5, 7)]
    return Verdict(verdict(within[:1], within[1]), f"mean ranks {fmt(r[list(picks)], 2)}")


@dataclass(frozen=True)
class Claim:
    id: str
    source: str
    claim: str
    rule: str
    needs: tuple[str, ...]  # the methods it reads: INCOMPLETE when one is missing
    check: Callable[[ClaimData], Verdict]
