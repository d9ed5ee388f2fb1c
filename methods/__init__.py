"""UQ methods behind one interface, found by name through the registry.

Importing this package registers every method below; ``get_method(name, **overrides)``
builds one with its config fields replaced.
"""

from udora.methods import bagging, blr, dropout, ensemble, gp_linear, gp_oracle  # noqa: F401
from udora.methods import catboost_kgb as catboost_kgb
from udora.methods import catboost_ps as catboost_ps
from udora.methods import deup as deup
from udora.methods import dkl as dkl
from udora.methods import edl as edl
from udora.methods import fsp_laplace as fsp_laplace
from udora.methods import laplace as laplace
from udora.methods import ngboost_bag as ngboost_bag
from udora.methods import ngboost_nig as ngboost_nig
from udora.methods import swag as swag
from udora.methods.base import ConfigError, MethodConfig, NotFittedError, Prediction, UQMethod
from udora.methods.combine import combine_members
from udora.methods.registry import get_method, get_method_class, list_methods, register

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
