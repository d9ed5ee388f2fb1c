"""Textbook numpy kernels: the independent computation the oracle tests compare with."""

from __future__ import annotations

import numpy as np


def numpy_kernel(spec: dict, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Dense numpy Gram matrix of one component, written from the textbook formulas."""
    t, v = spec["type"], spec["variance"]
    if t == "linear":
        return v * A @ B.T
    if t == "arccosine":
        w = np.asarray(spec.get("weight_variance", 1.0), dtype=float)
        b = spec.get("bias_variance", 1.0)
        # One summation routine for <x, y> and <x, x>, so cos(theta) is exactly 1 for x = y
        # (arccos near 1 would turn a 1-ulp difference into ~1e-8 in theta).
        xy = np.sum((A * w)[:, None, :] * B[None, :, :], axis=-1) + b
        xx = np.sum(A * w * A, axis=1) + b
        yy = np.sum(B * w * B, axis=1) + b
        cos = xy / np.sqrt(np.outer(xx, yy))
        # GPJax's definition shrinks cos by 1e-15 before arccos (keeps the gradient finite).
        theta = np.arccos(1e-15 + (1 - 2e-15) * cos)
        n = spec.get("order", 0)
        J = {
            0: np.pi - theta,
            1: np.sin(theta) + (np.pi - theta) * np.cos(theta),
            2: 3 * np.sin(theta) * np.cos(theta) + (np.pi - theta) * (1 + 2 * np.cos(theta) ** 2),
        }[n]
        return v / np.pi * J * np.outer(xx, yy) ** (n / 2)
    ls = np.asarray(spec["lengthscale"], dtype=float)
    diff = (A[:, None, :] - B[None, :, :]) / ls
    r2 = np.sum(diff**2, axis=-1)
    r = np.sqrt(r2)
    if t == "rbf":
        return v * np.exp(-0.5 * r2)
    if t == "matern12":
        return v * np.exp(-r)
    if t == "matern32":
        return v * (1 + np.sqrt(3) * r) * np.exp(-np.sqrt(3) * r)
    if t == "matern52":
        return v * (1 + np.sqrt(5) * r + 5 / 3 * r2) * np.exp(-np.sqrt(5) * r)
    if t == "rational_quadratic":
        a = spec.get("alpha", 1.0)
        return v * (1 + r2 / (2 * a)) ** (-a)
    if t == "powered_exponential":
        return v * np.exp(-(r ** spec.get("power", 1.0)))
    if t == "periodic":
        s = np.sin(np.pi * (A[:, None, :] - B[None, :, :]) / spec.get("period", 1.0)) / ls
        return v * np.exp(-0.5 * np.sum(s**2, axis=-1))
    raise AssertionError(t)


def numpy_sum_kernel(components: list[dict], A: np.ndarray, B: np.ndarray) -> np.ndarray:
    return sum(numpy_kernel(c, A, B) for c in components)
