"""A method's choice of where to label against the exact values (docs/metrics.md,
"Acquisition"; the values are :mod:`udora.oracle.acquisition`'s).

A method scores each candidate from its own estimates: by its EU (``largest EU``) and by
its BALD, ``1/2 log(1 + e(x) / max(a(x), floor))`` with ``floor = FLOOR * mean(a + e)``
over the candidates (a method whose AU is 0 then ranks by EU alone). Metrics: the
Spearman correlation of each score with each exact value, and for the ``k`` candidates
of largest score the exact joint BALD and joint variance reduction as a share of the
greedy exact batch's.
"""

from __future__ import annotations

import numpy as np

from udora.oracle.acquisition import VALUES, AcquisitionOracle, batch_values, greedy_batch
from udora.scoring.agreement import spearman

FLOOR = 1e-6
SCORES = ("eu", "bald")
BATCH_VALUES = ("bald", "variance_reduction")
BATCH = 50


def method_scores(aleatoric: np.ndarray, epistemic: np.ndarray) -> dict[str, np.ndarray]:
    """The method's acquisition scores from its AU and EU at the candidates, (C,) each."""
    a = np.asarray(aleatoric, np.float64)
    e = np.asarray(epistemic, np.float64)
    floor = FLOOR * float(np.mean(a + e))
    return {"eu": e, "bald": 0.5 * np.log1p(e / np.maximum(a, floor))}


def top(score: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` largest scores, largest first (ties to the smaller position)."""
    return np.argsort(-np.asarray(score), kind="stable")[:k]


def acquisition_names() -> tuple[str, ...]:
    """The metric names of :func:`acquisition_metrics`."""
    rho = tuple(f"acq_spearman_{s}_{v}" for s in SCORES for v in VALUES)
    return rho + tuple(f"acq_batch_{s}_{v}" for s in SCORES for v in BATCH_VALUES)


def acquisition_metrics(
    oracle: AcquisitionOracle, aleatoric: np.ndarray, epistemic: np.ndarray, k: int = BATCH
) -> dict[str, float]:
    """The acquisition metrics of a prediction over the pool (``aleatoric``, ``epistemic``
    (N,)) against ``oracle``: ``acq_spearman_<score>_<value>`` and
    ``acq_batch_<score>_<value>`` (module doc)."""
    c = oracle.candidates
    scores = method_scores(np.asarray(aleatoric)[c], np.asarray(epistemic)[c])
    best = {v: batch_values(oracle, greedy_batch(oracle, k, v))[v] for v in BATCH_VALUES}
    out: dict[str, float] = {}
    for s in SCORES:
        for v in VALUES:
            out[f"acq_spearman_{s}_{v}"] = spearman(scores[s], oracle.value(v))
        got = batch_values(oracle, top(scores[s], k))
        for v in BATCH_VALUES:
            out[f"acq_batch_{s}_{v}"] = got[v] / best[v]
    return {name: out[name] for name in acquisition_names()}
