"""The active-learning study: rounds of labelling chosen by each method's own uncertainty,
scored under the exact posterior (docs/joint_and_acquisition.md; `udora acquire`).

A *chain* is a preset, a method, a task seed and a strategy. Round 0 fits the method on
the task's training sample; each later round adds ``batch`` candidates (the pool points
outside the training sample not held out for evaluation, :func:`udora.oracle.acquisition.
split_pool` of the round-0 task) chosen from the previous round's prediction, labelled
with the task's realised outcomes, and refits. Strategies: ``eu`` (largest EU), ``bald``
(the method's BALD, :func:`udora.scoring.acquisition.method_scores`), ``random`` (uniform,
from the chain's own stream) and, for ``gp_oracle`` only, ``exact`` (the greedy batch of
largest exact joint variance reduction over the evaluation set under the round's
posterior). Every round is an ordinary run through the grid (resumable, failures
isolated): its preset carries the acquired points (``acquired``), so its task hash covers
them. After each round the study records, on the evaluation set only, the method's
posterior risk (the squared-error EU target plus AU: ``s2_f + (mu - m_S)^2 + sigma^2``,
under the round's own posterior) and its error to ``f``, ``(mu - f)^2``; at round 0 also
its acquisition metrics (:func:`udora.scoring.acquisition.acquisition_metrics`). Each
row also carries the round's run metrics of :data:`RUN_METRICS` and, for a round followed
by another, ``picked_noise_ratio``: the mean noise variance of the points it chose over
that of the candidates left.

The rows go to ``<out>/acquisition.parquet`` (one per chain and round; a chain whose
round failed stops there, its failure recorded).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from udora.oracle.joint import DESIGNS
from udora.oracle.streams import stream
from udora.scoring.acquisition import BATCH
from udora.scoring.joint import joint_names, predictive_covariance

STRATEGIES = ("eu", "bald", "random", "exact")
EXACT_ONLY = "gp_oracle"  # the one method whose strategy may be the exact value
ROWS = "acquisition.parquet"
# the round's own run metrics each row carries (its pointwise EU ranking and joint metrics)
RUN_METRICS = ("spearman_eu", "spearman_au", *joint_names(DESIGNS))


@dataclass(frozen=True)
class Chain:
    """One preset x method x task seed x strategy."""

    preset: str
    method: str
    seed: int
    strategy: str


def make_chains(
    presets: list[str], methods: list[str], seeds: list[int], strategies: tuple[str, ...]
) -> list[Chain]:
    """Every chain: each strategy for each method (``exact`` for ``gp_oracle`` only)."""
    unknown = [s for s in strategies if s not in STRATEGIES]
    if unknown:
        raise ValueError(f"unknown strategy {unknown[0]!r}; known: {', '.join(STRATEGIES)}")
    if len(set(strategies)) != len(strategies):
        raise ValueError(f"a strategy is given twice: {', '.join(strategies)}")
    return [
        Chain(p, m, int(s), strategy)
        for p in presets
        for s in seeds
        for m in methods
        for strategy in strategies
        if strategy != "exact" or m == EXACT_ONLY
    ]


def choose(
    chain: Chain,
    remaining: np.ndarray,
    prediction: dict[str, np.ndarray],
    batch: int,
    rng: np.random.Generator,
    round_task: Any = None,
    evaluation: np.ndarray | None = None,
) -> np.ndarray:
    """The next ``batch`` pool indices of ``chain`` among ``remaining`` (C,) from the
    round's ``prediction`` (``aleatoric``, ``epistemic`` over the pool); ``exact`` needs
    the round's task and the evaluation set."""
    from udora.scoring.acquisition import method_scores, top

    k = min(batch, remaining.size)
    if chain.strategy == "random":
        return np.sort(rng.choice(remaining, size=k, replace=False))
    if chain.strategy == "exact":
        from udora.oracle.acquisition import acquisition_oracle, greedy_batch

        oracle = acquisition_oracle(round_task, split=(remaining, evaluation))
        return remaining[greedy_batch(oracle, k, "variance_reduction")]
    scores = method_scores(prediction["aleatoric"][remaining], prediction["epistemic"][remaining])
    return remaining[top(scores[chain.strategy], k)]


def evaluation_scores(
    stored: Any, prediction: dict[str, np.ndarray], evaluation: np.ndarray
) -> dict[str, float]:
    """The posterior risk and the error to ``f`` of a prediction on the evaluation set,
    under a round's stored task arrays (``post_mean``, ``post_var``, ``noise_var``, ``f``)."""
    e = np.asarray(evaluation)
    mu = np.asarray(prediction["mean"])[e]
    risk = stored.post_var[e] + (mu - stored.post_mean[e]) ** 2 + stored.noise_var[e]
    return {
        "risk": float(np.mean(risk)),
        "eu_target": float(np.mean(stored.post_var[e] + (mu - stored.post_mean[e]) ** 2)),
        "error_f": float(np.mean((mu - stored.f[e]) ** 2)),
    }


def design_correlations(stored: Any) -> dict[str, float]:
    """``tc_<design>``: the mean total correlation (nats) of the posterior predictive over
    each design's batches of a stored task (:mod:`udora.scoring.joint`)."""
    from udora.scoring.joint import total_correlation

    j = stored.joint
    tc = total_correlation(predictive_covariance(j.post_cov, stored.noise_var[j.idx]))
    return {f"tc_{d}": float(np.mean(tc[j.design == k])) for k, d in enumerate(DESIGNS)}


def run_acquisition(
    chains: list[Chain],
    out: str | Path,
    *,
    rounds: int = 3,
    batch: int = BATCH,
    tuned: str | Path | None = None,
    data_dir: str | Path | None = None,
    executor: Any = None,
    console: Any = None,
) -> tuple[Any, Path]:
    """Run every chain's rounds into ``out`` (module doc); ``(the summed grid summary,
    the rows' file)``. Resumes: finished rounds are read back and their choices replayed."""
    import pandas as pd

    from udora.experiments.grid.bench import GridSummary, make_grid, run_grid
    from udora.experiments.run.execute import cached_task
    from udora.experiments.run.overrides import Overrides
    from udora.experiments.run.records import read_run
    from udora.experiments.tasks import arrays as oracle_arrays
    from udora.oracle.acquisition import acquisition_oracle
    from udora.oracle.atomic import write_parquet
    from udora.oracle.preset import load_preset
    from udora.scoring.acquisition import acquisition_metrics

    if rounds < 0 or batch < 1:
        raise ValueError(f"rounds must be >= 0 and batch >= 1; got {rounds} and {batch}")
    configs, sources = None, None
    if tuned is not None:
        from udora.experiments.tuning.tuned_files import check_tuned_preset_fields, tuned_configs

        methods = sorted({c.method for c in chains})
        configs, sources, _ = tuned_configs(tuned, sorted({c.preset for c in chains}), methods)
        check_tuned_preset_fields(sources, {})  # tuned with a preset field held: refused
    bases = {(c.preset, c.seed) for c in chains}
    base_oracle = {
        key: acquisition_oracle(cached_task(load_preset(key[0]), key[1], data_dir))
        for key in sorted(bases)
    }
    acquired: dict[Chain, list[int]] = {c: [] for c in chains}
    names = {p: load_preset(p).name for p in {c.preset for c in chains}}  # a path or a name
    rngs = {c: stream(c.seed, f"acquire_random {names[c.preset]} {c.method}") for c in chains}
    alive = list(chains)
    total, rows = GridSummary(), []
    first_metrics: dict[tuple[str, str, int], dict[str, float]] = {}
    for r in range(rounds + 1):
        run_of = {}
        for c in alive:
            over = Overrides(task={"acquired": list(acquired[c])} if acquired[c] else {})
            run_of[c] = make_grid(
                [c.preset], [c.method], [c.seed], over, data_dir=data_dir, tuned=configs
            )[0]
        unique = {run.rel_dir: run for run in run_of.values()}
        part = run_grid(
            list(unique.values()),
            out,
            data_dir=data_dir,
            console=console,
            config_sources=sources,
            executor=executor,
        )
        for field in ("done", "skipped", "failed", "not_run"):
            setattr(total, field, getattr(total, field) + getattr(part, field))
        total.interrupted = total.interrupted or part.interrupted
        if part.interrupted:
            break
        survivors = []
        for c in alive:
            run = run_of[c]
            found = read_run(run.run_dir(out))
            row = {
                "preset": c.preset,
                "method": c.method,
                "seed": c.seed,
                "strategy": c.strategy,
                "round": r,
                "n_acquired": len(acquired[c]),
                "task_hash": run.task_hash,
                "run": str(run.rel_dir),
                "status": found.record.status if found.record else "missing",
            }
            if row["status"] != "ok":
                rows.append(row | {"error": (found.record.error if found.record else None)})
                continue
            with np.load(run.run_dir(out) / "predictions.npz") as z:
                prediction = {k: z[k] for k in ("mean", "aleatoric", "epistemic")}
            oracle0 = base_oracle[(c.preset, c.seed)]
            stored = oracle_arrays.load(out, run.task_hash)
            row |= evaluation_scores(stored, prediction, oracle0.evaluation)
            metrics = found.record.metrics
            row |= {k: (np.nan if metrics.get(k) is None else metrics[k]) for k in RUN_METRICS}
            row |= design_correlations(stored)
            if r == 0:
                key = (c.preset, c.method, c.seed)
                if key not in first_metrics:
                    first_metrics[key] = acquisition_metrics(
                        oracle0, prediction["aleatoric"], prediction["epistemic"]
                    )
                row |= first_metrics[key]
            rows.append(row)
            survivors.append(c)
            if r < rounds:
                remaining = np.setdiff1d(oracle0.candidates, acquired[c])
                round_task = None
                if c.strategy == "exact":
                    round_task = cached_task(run.preset, c.seed, data_dir)
                picked = choose(
                    c, remaining, prediction, batch, rngs[c], round_task, oracle0.evaluation
                )
                acquired[c] = [*acquired[c], *map(int, picked)]
                # how noisy the chosen points are, against the candidates left to choose from
                noise = stored.noise_var
                row["picked_noise_ratio"] = float(
                    np.mean(noise[picked]) / np.mean(noise[remaining])
                )
        alive = survivors
    path = Path(out) / ROWS
    write_parquet(path, pd.DataFrame(rows))
    return total, path
