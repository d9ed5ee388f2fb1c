"""UQ methods behind one interface, found by name through the registry.

Importing this package is cheap: it imports no method module. ``get_method(name,
**overrides)`` imports and builds one (built-in or plugin, methods/registry.py); the
contract classes (``UQMethod``, ``MethodConfig``, ...) and the built-in modules
(``methods.blr``, ...) are imported on first access.
"""

from __future__ import annotations

import importlib
from typing import Any

from udora.methods.registry import get_method, get_method_class, list_methods, register

_LAZY = {
    "ConfigError": "udora.methods.base",
    "MethodConfig": "udora.methods.base",
    "NotFittedError": "udora.methods.base",
    "Prediction": "udora.methods.base",
    "UQMethod": "udora.methods.base",
    "combine_members": "udora.methods.combine",
}

__all__ = [
    "ConfigError",
    "MethodConfig",
    "NotFittedError",
    "Prediction",
    "UQMethod",
    "combine_members",
    "get_method",
    "get_method_class",
    "list_methods",
    "register",
]


def __getattr__(name: str) -> Any:
    """The contract classes and submodules (``methods.blr``), imported on first access."""
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as err:
        if err.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
