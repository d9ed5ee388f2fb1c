"""UQ methods behind one interface, found by name through the registry.

Importing this package registers every method below; ``get_method(name, **overrides)``
builds one with its config fields replaced.
"""

from methods import bagging, blr, dropout, ensemble, gp_linear, gp_oracle  # noqa: F401
from methods.base import ConfigError, MethodConfig, NotFittedError, Prediction, UQMethod
from methods.combine import combine_members
from methods.registry import get_method, get_method_class, list_methods, register

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
