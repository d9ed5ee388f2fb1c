"""What an oracle task's files hold (no JAX: the run folder code imports this before any
run starts); :mod:`udora.oracle.atomic` writes them."""

from __future__ import annotations

ARRAYS = ("X", "train_idx", "y_train", "f", "y", "noise_var", "post_mean", "post_var")
"""The array fields of :class:`~udora.oracle.task.OracleTask`, in original units: ``X``
(N, d), ``train_idx`` (n,), ``y_train`` (n,), the rest (N,). Its files store them and its
fingerprint hashes them."""
