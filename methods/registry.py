"""The one registry from method names to method classes.

``@register("name")`` on a class is the only step besides writing it; presets, the CLI
and sweeps refer to methods by name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_REGISTRY: dict[str, type] = {}


def register(name: str) -> Callable[[type], type]:
    """Class decorator: make ``cls`` available as ``get_method(name)``."""

    def deco(cls: type) -> type:
        if name in _REGISTRY and _REGISTRY[name] is not cls:
            raise ValueError(f"method name {name!r} is already registered by {_REGISTRY[name]}")
        _REGISTRY[name] = cls
        cls.name = name
        return cls

    return deco


def unregister(name: str) -> None:
    """Remove ``name`` from the registry (for tests that register a throwaway method)."""
    get_method_class(name)
    del _REGISTRY[name]


def list_methods() -> list[str]:
    """Names of all registered methods, sorted."""
    return sorted(_REGISTRY)


def get_method_class(name: str) -> type:
    """The class registered under ``name``; an unknown name lists the valid ones."""
    try:
        return _REGISTRY[name]
    except KeyError:
        valid = ", ".join(list_methods()) or "(none registered)"
        raise KeyError(f"unknown method {name!r}; valid methods: {valid}") from None


def get_method(name: str, **overrides: Any):
    """An instance of method ``name`` with config fields in ``overrides`` replaced.

    An unknown name lists the valid methods; an unknown field lists the valid fields.
    """
    return get_method_class(name)(**overrides)
