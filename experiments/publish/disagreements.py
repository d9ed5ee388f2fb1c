"""Where udora and the paper disagree (docs/paper_disagreements.md): the release table with
an experiment's rows in place of the release's ("the swap"), an arm's paired effect
against its baseline with the registered threshold, and the bootstrap probability that a
claim passes when the held-out presets and their task seeds are resampled.

Both read the table as the claims do (:class:`~udora.experiments.publish.claim_data.ClaimData`:
one config per method, seed means per preset, means over presets) and judge each replicate
with the claim's own rule (:data:`~udora.experiments.publish.reproduction.CLAIMS`).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from udora.errors import UserError
from udora.experiments.publish.artefact import primary_rows
from udora.experiments.publish.claim_data import SUITES, ClaimData
from udora.experiments.publish.reproduction import CLAIMS
from udora.experiments.publish.variants import Variant
from udora.experiments.rankings.noise import noise_floor

MODES = ("both", "presets", "seeds")
VERDICTS = ("PASS", "PARTIAL", "FAIL", "ERROR")
KEY = ["preset", "method", "seed"]


def claim_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The rows claims read: primary (no package copy of a preset's data), without the
    noise floor's ``method_seed`` variants."""
    rows = primary_rows(table)
    if "method_seed" in rows:
        rows = rows[rows["method_seed"].isna()]
    return rows


def claim_config(method: str, configs) -> str:
    """The config claims read for ``method``: ``method@tuned`` where ``configs`` (a
    release's configs) has it, else the bare method."""
    return f"{method}@tuned" if f"{method}@tuned" in set(configs) else method


def swap(release: pd.DataFrame, new: pd.DataFrame, method_seed: int | None = None) -> pd.DataFrame:
    """The release's claim rows with every ok row of ``new`` in place of the release row of
    the same (preset, method, seed) of that method's claim config (``method@tuned``; the
    bare method for one without a tuned config), relabelled as that config.

    ``method_seed``: take only the rows of ``new`` fitted with that ``method_seed`` (a fit
    seed's replicate of the method); without it, rows with a ``method_seed`` are refused.
    Raises UserError naming the presets or methods ``new`` has that the release has not, a
    (preset, method, seed) with more than one config in ``new``, or when no row of ``new``
    replaces a release row.
    """
    base = claim_rows(release)
    rows = primary_rows(new)
    rows = rows[rows["status"] == "ok"]
    seeded = rows["method_seed"].notna() if "method_seed" in rows else pd.Series(False, rows.index)
    if method_seed is None and seeded.any():
        raise UserError(
            "the new rows set method_seed (fit-seed replicates): give --method-seed to take "
            "one replicate as the method's rows"
        )
    if method_seed is not None:  # the replicate stands in as the method's rows, so it is
        # no longer a method_seed variant (which claim_rows would leave out again)
        rows = rows[seeded & (rows.get("method_seed") == method_seed)]
        rows = rows.assign(method_seed=np.nan)
    for field in ("preset", "method"):
        unknown = sorted(set(rows[field]) - set(base[field]))
        if unknown:
            raise UserError(f"{field}s not in the release: {', '.join(unknown)}")
    twice = rows.groupby(KEY)["config"].nunique()
    if (twice > 1).any():  # one config per method: configs are never averaged
        preset, method, seed = twice[twice > 1].index[0]
        at = (rows["preset"] == preset) & (rows["method"] == method) & (rows["seed"] == seed)
        configs = sorted(rows.loc[at, "config"])
        raise UserError(
            f"{method} on {preset} seed {seed} has several configs in the new rows "
            f"({', '.join(configs)}); swap one config per method"
        )
    configs = set(base.loc[base["status"] == "ok", "config"])  # as paired_effects reads
    label = {m: claim_config(m, configs) for m in base["method"].unique()}
    rows = rows.assign(config=rows["method"].map(label))
    hit = base.set_index(KEY).index.isin(rows.set_index(KEY).index) & (
        base["config"] == base["method"].map(label)
    )
    if not hit.any():
        raise UserError("no new row replaces a release row (same preset, method and seed)")
    return pd.concat([base[~hit], rows[base.columns.intersection(rows.columns)]], ignore_index=True)


def sign_quorum(n_presets: int) -> int:
    """How many presets' mean differences must share the overall effect's sign: 5 of 7
    (the held-out suite), all of 2 or fewer, else the same share rounded up."""
    return n_presets if n_presets <= 2 else math.ceil(5 * n_presets / 7)


NOISE = {"fit": "fixed_task_sd", "task": "task_seed_sd"}


def paired_effects(
    new: pd.DataFrame,
    base: pd.DataFrame,
    release: pd.DataFrame,
    metrics: tuple[str, ...],
    noise: str = "fit",
) -> pd.DataFrame:
    """The registered effect of an arm (docs/paper_disagreements.md, 1.2): per method of
    ``new``, suite and metric, over the R (preset, seed) tasks of that suite both ``new``
    and ``base`` ran ok, ``delta`` the mean paired difference new - base; ``sigma`` the
    release's noise of the method's claim config (:func:`claim_config`;
    :func:`~udora.experiments.rankings.noise.noise_floor`): with ``noise="fit"`` its
    own-seed noise on a fixed task (``fixed_task_sd``, sigma_m), with ``"task"`` the
    spread over task seeds (``task_seed_sd``, sigma_t, for arms on other tasks);
    ``threshold`` T = 2 sqrt(2) sigma / sqrt(R); ``agree`` the presets whose mean
    difference has delta's sign, of ``presets``, against :func:`sign_quorum`; ``passes``
    "yes" when ``abs(delta) > T`` and the quorum holds, "no", or "n/a" when the release
    has no noise floor for it. ``baseline`` says what the arm was compared with: ``arm``
    (``base``'s rows) or, for a method ``base`` never ran, ``release`` (the release's own
    rows of its claim config, not its ``method_seed`` replicates; a metric variant's
    metrics must then be derived on ``release`` too). Raises UserError naming a metric the
    rows lack (or hold on no task of both), a method with several configs on one task, a
    method neither ran or an unknown ``noise``."""
    if noise not in NOISE:
        raise UserError(f"noise must be one of {', '.join(NOISE)}; got {noise!r}")
    own_rows = primary_rows(release)  # not the package copies' rows of a preset
    floor = noise_floor(own_rows[own_rows["status"] == "ok"], metrics=metrics)
    rows = []
    new, base = (t[t["status"] == "ok"] for t in (primary_rows(new), primary_rows(base)))
    released = own_rows[own_rows["status"] == "ok"]
    if "method_seed" in released:
        released = released[released["method_seed"].isna()]
    for metric in metrics:
        if metric not in new or metric not in base:
            raise UserError(f"the rows have no metric {metric!r}")
    for name, rows_of in (("new", new), ("baseline", base)):  # configs are never averaged
        twice = rows_of.groupby(["preset", "method", "seed"])["config"].nunique()
        if (twice > 1).any():
            preset, method, seed = twice[twice > 1].index[0]
            raise UserError(
                f"the {name} rows hold several configs of {method} on {preset} seed {seed}; "
                "compare one config per method"
            )
    configs = set(released["config"])
    for (method, suite), part in new.groupby(["method", "suite"]):
        label = claim_config(method, configs)
        other, against = base[base["method"] == method], "arm"
        if other.empty:  # one config, the one claims read
            other, against = released[released["config"] == label], "release"
            lacking = [m for m in metrics if m not in other or not other[m].notna().any()]
            if lacking and not other.empty:
                raise UserError(
                    f"the release's rows of {label} have no {lacking[0]!r} to compare "
                    f"{method} with (the baseline arm never ran it)"
                )
        if other.empty:
            raise UserError(f"neither the baseline arm nor the release has an ok run of {method}")
        for metric in metrics:
            both = pd.concat(
                {
                    "new": part.groupby(["preset", "seed"])[metric].mean(),
                    "base": other.groupby(["preset", "seed"])[metric].mean(),
                },
                axis=1,
                join="inner",
            ).dropna()
            if both.empty:
                raise UserError(
                    f"{method} ({suite}): no (preset, seed) where both the new and the "
                    f"{against} rows have {metric!r}"
                )
            diff = both["new"] - both["base"]
            per_preset = diff.groupby(level="preset").mean()
            delta = float(diff.mean()) if len(diff) else np.nan
            if floor.empty:  # a release without method_seed replicates has no floor
                own = floor
            else:
                own = floor[(floor["config"] == label) & (floor["metric_key"] == metric)]
            sigma = float(own[NOISE[noise]].iloc[0]) if len(own) else np.nan
            threshold = 2 * math.sqrt(2) * sigma / math.sqrt(len(diff)) if len(diff) else np.nan
            agree = int((np.sign(per_preset) == np.sign(delta)).sum())
            holds = abs(delta) > threshold and agree >= sign_quorum(len(per_preset))
            rows.append(
                {
                    "method": method,
                    "suite": suite,
                    "metric": metric,
                    "baseline": against,
                    "R": len(diff),
                    "delta": delta,
                    "sigma": sigma,
                    "threshold": threshold,
                    "agree": agree,
                    "presets": len(per_preset),
                    "passes": "n/a" if not np.isfinite(threshold) else "yes" if holds else "no",
                }
            )
    return pd.DataFrame(rows)


def replicate(table: pd.DataFrame, rng: np.random.Generator, mode: str) -> pd.DataFrame:
    """One bootstrap replicate of ``table``'s held-out rows (the suite the rules judge):
    ``presets`` draws the presets with replacement (a preset drawn twice counts twice, as
    :meth:`ClaimData.ci` treats a repeated row); ``seeds`` draws each preset's task seeds
    with replacement, the same draw for every method (the methods share their tasks, so
    the pairing is kept); ``both`` does the first, then the second inside each drawn preset.
    The other suites' rows are kept as they are."""
    judged = table["suite"] == SUITES[0]
    held, rest = table[judged], table[~judged]
    presets = sorted(held["preset"].unique())
    seeds = sorted(held["seed"].unique())
    drawn = list(rng.choice(presets, len(presets))) if mode in ("both", "presets") else presets
    parts = []
    for k, preset in enumerate(drawn):
        part = held[held["preset"] == preset]
        if mode in ("both", "seeds"):
            pick = rng.choice(seeds, len(seeds))
            part = pd.concat([part[part["seed"] == s].assign(seed=j) for j, s in enumerate(pick)])
        parts.append(part.assign(preset=f"{preset}#{k}"))
    return pd.concat([rest, *parts], ignore_index=True)


def pass_probability(
    table: pd.DataFrame,
    claims: tuple[str, ...],
    n_boot: int = 1000,
    mode: str = "both",
    seed: int = 48,
    inner: int = 2000,
    variant: Variant | None = None,
) -> pd.DataFrame:
    """(claims, counts of each verdict, ``p_pass``, ``p_pass_or_partial``) over ``n_boot``
    replicates (:func:`replicate`) of ``table``'s claim rows; ``inner``: the draws of a
    rule's own interval inside each replicate (:meth:`ClaimData.ci`). A rule that cannot be
    computed on a replicate counts as ERROR; ``variant``: every replicate judged under
    that metric variant (:mod:`udora.experiments.publish.variants`). Raises UserError for
    an unknown claim or mode and for a table without held-out rows."""
    if mode not in MODES:
        raise UserError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
    by_id = {c.id.lower(): c for c in CLAIMS}
    unknown = [c for c in claims if c.lower() not in by_id]
    if unknown:
        raise UserError(f"unknown claims {', '.join(unknown)}; known: {', '.join(by_id)}")
    rows = claim_rows(table)
    if not (rows["suite"] == SUITES[0]).any():
        raise UserError(
            f"no rows of the {SUITES[0]} suite, which the claims are judged on: nothing to resample"
        )
    rng = np.random.default_rng(seed)
    counts = {c: dict.fromkeys(VERDICTS, 0) for c in claims}
    for _ in range(n_boot):
        drawn = replicate(rows, rng, mode)
        data = (
            variant.data(drawn, n_boot=inner)
            if variant is not None
            else ClaimData(drawn, n_boot=inner)
        )
        for c in claims:
            claim = by_id[c.lower()]
            check = variant.check(claim) if variant is not None else claim.check
            try:
                found = check(data).verdict
            except (ValueError, IndexError, KeyError, TypeError):
                found = "ERROR"
            counts[c][found] += 1
    out = pd.DataFrame.from_dict(counts, orient="index")
    out["p_pass"] = out["PASS"] / n_boot
    out["p_pass_or_partial"] = (out["PASS"] + out["PARTIAL"]) / n_boot
    out.index.name = "claim"
    return out
