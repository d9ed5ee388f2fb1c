"""Per-point classification targets of a method's class probabilities ``q``.

With ``p_f(x)`` the class probabilities of the latent function and ``pbar = E_post p_f``
(docs/design.md, "Classification: targets"), under the log loss

    AU = E_post H(p_f),     EU(q) = E_post KL(p_f || q) = [H(pbar) - AU] + KL(pbar || q),

and under the Brier score summed over the classes (twice scikit-learn's binary
``brier_score_loss``)

    AU = 1 - E_post ||p_f||^2,     EU(q) = E_post ||p_f - pbar||^2 + ||pbar - q||^2.

``AU + EU(q)`` is the posterior risk of predicting ``q``. Both EUs are linear in the
posterior expectations ``(pbar, E H(p_f), E ||p_f||^2)``:
``EU_log(q) = -E H(p_f) - sum_c pbar_c log q_c`` and
``EU_brier(q) = E ||p_f||^2 - 2 pbar . q + ||q||^2``, so the same expressions of each
batch's means give their Monte Carlo standard errors (batch means; stored with the task).
Numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

EPS = 1e-12
"""The floor on a method's probabilities inside a log loss (observed and target alike)."""


def entropy(p: np.ndarray) -> np.ndarray:
    """Entropy in nats of class probabilities ``p`` (..., C) -> (...); 0 log 0 = 0."""
    p = np.asarray(p, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)
    return -terms.sum(axis=-1)


@dataclass(frozen=True)
class PosteriorMoments:
    """The posterior expectations at N pool points and their batch means.

    ``prob`` (N, C) = ``pbar``; ``entropy`` (N,) = ``E H(p_f)``; ``square`` (N,) =
    ``E ||p_f||^2``; ``*_batches`` the same per batch, (B, N, C) and (B, N), B =
    chains x batches per chain, each batch a run of consecutive draws of one chain.
    """

    prob: np.ndarray
    entropy: np.ndarray
    square: np.ndarray
    prob_batches: np.ndarray
    entropy_batches: np.ndarray
    square_batches: np.ndarray

    @property
    def n_batches(self) -> int:
        return int(self.entropy_batches.shape[0])

    def standard_error(self, batch_values: np.ndarray) -> np.ndarray:
        """The batch-means standard error of an estimate whose per-batch values are
        ``batch_values`` (B, ...) -> (...)."""
        return batch_values.std(axis=0, ddof=1) / np.sqrt(self.n_batches)

    @property
    def mutual_information(self) -> np.ndarray:
        """``H(pbar) - E H(p_f)`` (N,): the posterior's epistemic part under log loss."""
        return np.maximum(entropy(self.prob) - self.entropy, 0.0)

    @property
    def brier_spread(self) -> np.ndarray:
        """``E ||p_f - pbar||^2 = E ||p_f||^2 - ||pbar||^2`` (N,)."""
        return np.maximum(self.square - np.sum(self.prob**2, axis=-1), 0.0)

    def risks(self, q: np.ndarray, eps: float = EPS) -> dict[str, np.ndarray]:
        """AU and EU of predicting ``q`` (N, C) under both losses, with standard errors.

        Returns (N,) arrays: ``au_log``, ``eu_log``, ``au_brier``, ``eu_brier`` and each
        one's ``*_se``. ``q`` is floored at ``eps`` inside the log (a method's log loss
        is floored alike).
        """
        q = np.asarray(q, dtype=np.float64)
        t = target_arrays(self.prob, self.entropy, self.square, q, eps)
        b = target_arrays(self.prob_batches, self.entropy_batches, self.square_batches, q, eps)
        return {
            "au_log": self.entropy,
            "au_log_se": self.standard_error(self.entropy_batches),
            "eu_log": t["eu_log"],
            "eu_log_se": self.standard_error(b["eu_log"]),
            "au_brier": t["au_brier"],
            "au_brier_se": self.standard_error(self.square_batches),
            "eu_brier": t["eu_brier"],
            "eu_brier_se": self.standard_error(b["eu_brier"]),
        }


def target_arrays(
    pbar: np.ndarray,
    exp_entropy: np.ndarray,
    exp_square: np.ndarray,
    q: np.ndarray,
    eps: float = EPS,
) -> dict[str, np.ndarray]:
    """The targets of predicting ``q`` (..., N, C) from the expectations ``pbar``
    (..., N, C), ``E H(p_f)`` and ``E ||p_f||^2`` (..., N) (module docstring): ``eu_log``,
    its parts ``mi`` and ``kl`` (``KL(pbar || q)``), ``au_brier`` and ``eu_brier``, each
    (..., N); ``q`` floored at ``eps`` inside the log. The one statement of the formulas,
    for :meth:`PosteriorMoments.risks` and the scorer."""
    log_q = np.log(np.maximum(q, eps))
    cross = -np.sum(pbar * log_q, axis=-1)
    h_pbar = entropy(pbar)
    return {
        "eu_log": cross - exp_entropy,
        "mi": h_pbar - exp_entropy,
        "kl": cross - h_pbar,
        "au_brier": 1.0 - exp_square,
        "eu_brier": exp_square - 2 * np.sum(pbar * q, axis=-1) + np.sum(q * q, axis=-1),
    }


SHAPES = {
    "X": "N d",
    "train_idx": "n",
    "y_train": "n",
    "f": "N L",
    "y": "N",
    "prob": "N C",
    "entropy": "N",
    "square": "N",
    "prob_se": "N C",
    "entropy_se": "N",
    "square_se": "N",
    "prob_batches": "B N C",
    "entropy_batches": "B N",
    "square_batches": "B N",
}
"""The arrays a classification task keeps and their axes (L: latent functions, C:
classes, B: batches)."""


def summary(arrays: dict[str, np.ndarray], info: dict) -> dict:
    """What ``udora oracle show`` prints of a classification task's folder: sizes, the
    medians of the targets and of their relative Monte Carlo errors, and the diagnostics."""
    moments = PosteriorMoments(
        *(arrays[k] for k in ("prob", "entropy", "square")),
        *(arrays[k] for k in ("prob_batches", "entropy_batches", "square_batches")),
    )
    mi = moments.mutual_information
    diag = info.get("diagnostics", {})
    point = diag.get("per_point", {})

    def rel(value: np.ndarray, se: np.ndarray) -> float:
        return float(np.median(se / np.maximum(np.abs(value), 1e-12)))

    return {
        "kind": "classification",
        "preset": info["preset"],
        "seed": info["seed"],
        "N": int(arrays["X"].shape[0]),
        "d": int(arrays["X"].shape[1]),
        "n": int(arrays["train_idx"].shape[0]),
        "n_unique_train": info["n_unique_train"],
        "classes": int(arrays["prob"].shape[1]),
        "bin_counts": info["bin_counts"],
        "median_AU_entropy": float(np.median(moments.entropy)),
        "median_mutual_information": float(np.median(mi)),
        "median_relative_se_prob": rel(arrays["prob"], arrays["prob_se"]),
        "median_relative_se_entropy": rel(arrays["entropy"], arrays["entropy_se"]),
        "median_relative_se_square": rel(1.0 - arrays["square"], arrays["square_se"]),
        "split_half_spearman_mi": diag.get("split_half_spearman", {}).get("mutual_information"),
        "split_half_spearman_au": diag.get("split_half_spearman", {}).get("au_entropy"),
        "au_ceiling_spearman": info.get("au_ceiling_spearman"),
        "bayes_log_loss": info.get("bayes_log_loss"),
        "bayes_accuracy": info.get("bayes_accuracy"),
        "draws_per_chain": diag.get("draws_per_chain"),
        "divergences": diag.get("divergences"),
        "min_ess_bulk": point.get("min_ess_bulk"),
        "min_ess_tail": point.get("min_ess_tail"),
        "max_rhat": point.get("max_rhat"),
        "median_rhat": point.get("median_rhat"),
        "seconds": info.get("seconds_total"),
    }
