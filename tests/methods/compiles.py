"""Counting what JAX compiles: a context manager over JAX's own compile events."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from jax import monitoring

_ACTIVE: list[list[str]] = []


def _listen(event: str, duration: float, **kwargs) -> None:
    del duration
    if event == "/jax/core/compile/backend_compile_duration":  # cache loads included
        for names in _ACTIVE:
            names.append(str(kwargs.get("fun_name", "?")))


monitoring.register_event_duration_secs_listener(_listen)


@contextlib.contextmanager
def count_compiles() -> Iterator[list[str]]:
    """The names of the programs compiled (or loaded from the persistent cache) inside the
    block, in order; empty when everything ran from programs already in the process."""
    names: list[str] = []
    _ACTIVE.append(names)
    try:
        yield names
    finally:
        _ACTIVE.remove(names)
