"""UQ methods behind one interface, found by name through the registry.

Importing this package registers every method below; ``get_method(name, **overrides)``
builds one with its config fields replaced.
"""

from methods import bagging, blr, dropout, ensemble, gp_linear, gp_oracle  # noqa: F401
from methods import catboost_kgb as catboost_kgb
from methods import catboost_ps as catboost_ps
from methods import deup as deup
from methods import dkl as dkl
from methods import edl as edl
from methods import fsp_laplace as fsp_laplace
from methods import laplace as laplace
from methods import ngboost_bag as ngboost_bag
from methods import ngboost_nig as ngboost_nig
from methods import swag as swag
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
