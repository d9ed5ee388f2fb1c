"""Trackers: what the epoch loop keeps besides the iterate, as pure functions.

A tracker is a tuple of pure functions (in the style of an ``optax`` transformation):

    init(params, state, args) -> s                     args: the tracker's traced numbers
    update(s, epoch, params, state, val_loss) -> s     after each epoch (0-based ``epoch``)
    done(s) -> bool                                    stop training (any tracker stops it)
    result(s) -> r                                     what the trainer returns (default s)

``val_loss`` is the scalar validation loss in eval mode, or None without a validation split.
The factories are cached, so the same settings give the same (hashable) tracker and the
compiled programs that use it are reused (:mod:`methods.nn.trainer`). What a sweep changes
(SWAG's checkpoint spacing, burn-in and count) is not a factory setting but an ``args``
of the program call (``None`` for trackers without any), so it does not recompile.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp


def never(s: Any) -> bool:
    """``done`` of a tracker that never stops training."""
    del s
    return False


def identity(s: Any) -> Any:
    """``result`` of a tracker whose state is its result."""
    return s


class Tracker(NamedTuple):
    """``init``, ``update``, ``done`` and ``result`` of one tracker (see the module doc).

    ``result`` runs inside the compiled program, so its arithmetic is compiled with the
    loop (an eager division can round differently).
    """

    init: Callable[[Any, Any, Any], Any]
    update: Callable[[Any, jax.Array, Any, Any, jax.Array | None], Any]
    done: Callable[[Any], jax.Array | bool] = never
    result: Callable[[Any], Any] = identity


class BestEpoch(NamedTuple):
    """Best-epoch state: ``(params, state)`` of the best epoch, its loss, epochs since."""

    best: tuple[Any, Any]
    best_val: jax.Array
    bad: jax.Array


@functools.cache
def best_epoch(patience: int) -> Tracker:
    """Early stopping: keep the variables of the epoch with the lowest ``val_loss``.

    Stops after ``patience`` epochs without improvement. Without a validation split every
    epoch counts as an improvement (the last epoch is kept, ``best_val`` = 0).
    """

    def init(params, state, args) -> BestEpoch:
        del args
        inf = jnp.asarray(jnp.inf, jnp.float32)
        return BestEpoch((params, state), inf, jnp.zeros((), jnp.int32))

    def update(s: BestEpoch, epoch, params, state, val_loss) -> BestEpoch:
        del epoch
        if val_loss is None:
            current, better = jnp.zeros((), jnp.float32), True
        else:
            current, better = val_loss, val_loss < s.best_val
        best = jax.tree.map(lambda new, old: jnp.where(better, new, old), (params, state), s.best)
        best_val = jnp.where(better, current, s.best_val)
        return BestEpoch(best, best_val, jnp.where(better, 0, s.bad + 1))

    def done(s: BestEpoch) -> jax.Array:
        return s.bad >= patience

    return Tracker(init, update, done)


@functools.cache
def last_epoch() -> Tracker:
    """The fixed schedule: keeps the last epoch's ``val_loss`` (0 without a split). Never stops."""

    def init(params, state, args) -> jax.Array:
        del params, state, args
        return jnp.zeros((), jnp.float32)

    def update(s, epoch, params, state, val_loss) -> jax.Array:
        del s, epoch, params, state
        return jnp.zeros((), jnp.float32) if val_loss is None else val_loss

    return Tracker(init, update)


def taken(epoch: jax.Array, every: jax.Array | int, start: jax.Array | int) -> jax.Array:
    """Whether ``epoch`` (0-based) ends a checkpoint: past ``start`` burn-in epochs, then
    every ``every``-th epoch (epochs ``start + every - 1``, ``start + 2 every - 1``, ...)."""
    return (epoch >= start) & ((epoch + 1 - start) % every == 0)


class Moments(NamedTuple):
    """Running sums of ``theta`` and ``theta^2`` (params trees), their count ``C``, and
    the schedule (:func:`taken`'s ``every`` and ``start``, int32 scalars)."""

    first: Any
    second: Any
    count: jax.Array
    every: jax.Array
    start: jax.Array


def schedule_args(every: int, start: int, n: int | None = None) -> tuple[jax.Array, ...]:
    """The ``args`` of :func:`swag_moments` (``every``, ``start``) and, with ``n``, of
    :func:`checkpoints` (``every``, ``start``, ``n``), as int32 scalars."""
    values = (every, start) if n is None else (every, start, n)
    return tuple(jnp.asarray(v, jnp.int32) for v in values)


@functools.cache
def swag_moments() -> Tracker:
    """SWAG's moments: after ``start`` burn-in epochs, after every ``every``-th epoch add
    ``theta_c`` and ``theta_c^2`` (:func:`taken`); ``args`` = :func:`schedule_args`
    ``(every, start)``.

    Its result is ``(E[theta], E[theta^2])`` (:func:`moment_means`). Never stops.
    """

    def init(params, state, args) -> Moments:
        del state
        every, start = args
        zeros = jax.tree.map(jnp.zeros_like, params)
        return Moments(zeros, zeros, jnp.zeros((), jnp.float32), every, start)

    def update(s: Moments, epoch, params, state, val_loss) -> Moments:
        del state, val_loss
        take = taken(epoch, s.every, s.start)
        first = jax.tree.map(lambda a, p: a + jnp.where(take, p, 0.0), s.first, params)
        second = jax.tree.map(lambda a, p: a + jnp.where(take, p * p, 0.0), s.second, params)
        return s._replace(first=first, second=second, count=s.count + take.astype(jnp.float32))

    return Tracker(init, update, result=moment_means)


def moment_means(s: Moments) -> tuple[Any, Any]:
    """``E[theta] = (1/C) sum_c theta_c`` and ``E[theta^2]`` (C clipped to >= 1)."""
    count = jnp.maximum(s.count, 1.0)
    return tuple(jax.tree.map(lambda a: a / count, t) for t in (s.first, s.second))


class Checkpoints(NamedTuple):
    """The checkpoints themselves: a params tree with a leading ``(capacity,)`` axis, how
    many are stored, and the schedule (``every``, ``start``, ``n``; int32 scalars)."""

    stack: Any
    count: jax.Array
    every: jax.Array
    start: jax.Array
    n: jax.Array


@functools.cache
def checkpoints(capacity: int) -> Tracker:
    """Store the first ``n <= capacity`` checkpoints :func:`swag_moments` takes with the
    same ``every`` and ``start``, in order; ``args`` = :func:`schedule_args`
    ``(every, start, n)``. Only ``capacity`` (the stack's length) is static, so every
    ``n`` up to it shares one program.

    Its result is the params tree with a leading ``(capacity,)`` axis (rows past ``n`` stay
    0). Never stops.
    """

    def init(params, state, args) -> Checkpoints:
        del state
        every, start, n = args
        stack = jax.tree.map(lambda p: jnp.zeros((capacity, *p.shape), p.dtype), params)
        return Checkpoints(stack, jnp.zeros((), jnp.int32), every, start, n)

    def update(s: Checkpoints, epoch, params, state, val_loss) -> Checkpoints:
        del state, val_loss
        take = taken(epoch, s.every, s.start) & (s.count < jnp.minimum(s.n, capacity))
        index = jnp.minimum(s.count, capacity - 1)
        stack = jax.tree.map(lambda a, p: jnp.where(take, a.at[index].set(p), a), s.stack, params)
        return s._replace(stack=stack, count=s.count + take.astype(jnp.int32))

    return Tracker(init, update, result=lambda s: s.stack)
