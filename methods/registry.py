"""The one registry from method names to method classes: built-ins and plugins.

Presets, the CLI and sweeps refer to methods by name (docs/design.md, "Methods").

- **Built-ins** are listed in :data:`BUILTIN_METHODS` (``name -> "module:Class"``) and
  imported on first use; each module's ``@register("name")`` must agree with the table
  (``tests/methods/test_plugin.py`` checks it). Keeping them out of entry points means a
  built-in never depends on installed metadata being fresh.
- **Plugins**: any installed distribution declares
  ``[project.entry-points."udora.methods"] knn = "my_pkg.knn:KNN"``
  (docs/adding_a_method.md). Entry points are read once; a plugin is imported on first
  use and checked (:mod:`udora.methods.plugins`). One that fails to import, names a missing
  class or declares something udora cannot use (a config field without a default, an
  unknown family, ...) gives one :class:`PluginWarning` naming the entry point and why and
  is left out of every listing and grid; a plugin name that is also a built-in's (or
  declared twice) is an error naming both.
- :func:`method_infos` lists names, origins and each class's one-line docstring; the
  built-ins' are read with :mod:`ast`, importing no built-in method module (``udora
  methods`` answers without JAX unless a plugin imports it).
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from udora.errors import UnknownNameError, UserError
from udora.methods.plugins import PluginWarning, describe, load_plugin, warn_left_out
from udora.names import check_name
from udora.oracle.kinds import REGRESSION

__all__ = [
    "BUILTIN_METHODS",
    "ENTRY_POINT_GROUP",
    "MethodInfo",
    "PluginWarning",
    "get_method",
    "get_method_class",
    "list_methods",
    "method_infos",
    "register",
    "unregister",
]
ENTRY_POINT_GROUP = "udora.methods"
BUILTIN_METHODS: dict[str, str] = {
    "blr": "udora.methods.blr:BayesianLinearRegression",
    "blr_logistic": "udora.methods.blr_logistic:BayesianLogisticRegression",
    "catboost_kgb": "udora.methods.catboost_kgb:CatBoostKGB",
    "catboost_ps": "udora.methods.catboost_ps:CatBoostPS",
    "catboost_ve": "udora.methods.catboost_ve:CatBoostVE",
    "deup": "udora.methods.deup:DEUP",
    "deup_unbiased": "udora.methods.deup:DEUPUnbiased",
    "dkl": "udora.methods.dkl:DKL",
    "edl": "udora.methods.edl:EDL",
    "fsp_laplace": "udora.methods.fsp_laplace:FSPLaplace",
    "gp_linear": "udora.methods.gp_linear:LinearGP",
    "gp_oracle": "udora.methods.gp_oracle:OracleGP",
    "gp_approx": "udora.methods.gp_approx:ApproxGP",
    "laplace": "udora.methods.laplace:LastLayerLaplace",
    "ngboost_bag": "udora.methods.ngboost_bag:NGBoostBag",
    "ngboost_nig": "udora.methods.ngboost_nig:NGBoostNIG",
    "nn_bagging": "udora.methods.bagging:NNBagging",
    "nn_dropout": "udora.methods.dropout:NNDropout",
    "nn_ensemble": "udora.methods.ensemble:NNEnsemble",
    "swag": "udora.methods.swag:SWAG",
}

_REGISTRY: dict[str, type] = {}
_PLUGINS: dict[str, importlib.metadata.EntryPoint] | None = None  # read once
_BROKEN: dict[str, str] = {}  # plugin name -> why it is left out


@dataclass(frozen=True)
class MethodInfo:
    """One method as listed: name, ``module:Class``, where it comes from, docstring line."""

    name: str
    target: str
    origin: str  # "built-in", "plugin <distribution> <version>" or "registered in code"
    summary: str
    family: str = "other"
    uses_task_prior: bool = False
    kinds: tuple[str, ...] = (REGRESSION,)  # the task kinds it declares (UQMethod.kinds)
    # UQMethod.aleatoric: "per point", "constant" or a dict of them by kind (aleatoric_on)
    aleatoric: str | dict[str, str] = "per point"
    not_for: tuple[tuple[str, str], ...] = ()  # UQMethod.not_for: (kind, why) pairs


def _target(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def register(name: str) -> Callable[[type], type]:
    """Class decorator: make ``cls`` available as ``get_method(name)``."""

    check_name(name, "method name")

    def deco(cls: type) -> type:
        if name in _REGISTRY and _REGISTRY[name] is not cls:
            raise UserError(f"method name {name!r} is already registered by {_REGISTRY[name]}")
        builtin = BUILTIN_METHODS.get(name)
        if builtin is not None and builtin != _target(cls):
            raise UserError(f"method name {name!r} is the built-in {builtin}, not {_target(cls)}")
        _REGISTRY[name] = cls
        cls.name = name
        return cls

    return deco


def unregister(name: str) -> None:
    """Remove ``name`` from the registry (for tests that register a throwaway method)."""
    get_method_class(name)
    del _REGISTRY[name]


def plugin_entry_points() -> dict[str, importlib.metadata.EntryPoint]:
    """The ``udora.methods`` entry points of installed distributions, by name; read once.

    Raises:
        UserError: a plugin uses a built-in's name, or two plugins declare one name.
    """
    global _PLUGINS
    if _PLUGINS is None:
        found: dict[str, importlib.metadata.EntryPoint] = {}
        for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            if ep.name in BUILTIN_METHODS:
                raise UserError(
                    f"method name {ep.name!r}: plugin entry point {describe(ep)} clashes "
                    f"with the built-in {BUILTIN_METHODS[ep.name]}; rename the entry point"
                )
            if ep.name in found and found[ep.name].value != ep.value:
                raise UserError(
                    f"method name {ep.name!r} is declared by two plugin entry points: "
                    f"{describe(found[ep.name])} and {describe(ep)}"
                )
            found[ep.name] = ep
        _PLUGINS = found
    return _PLUGINS


def _load_builtin(name: str) -> type:
    module, _, qualname = BUILTIN_METHODS[name].partition(":")
    cls = getattr(importlib.import_module(module), qualname)
    return _REGISTRY.get(name) or register(name)(cls)  # the import ran @register


def _load_plugin(name: str, warn: bool = True) -> type | None:
    """The plugin's class, registered; None when it is left out (after one warning, unless
    ``warn`` is off: a caller that raises the reason itself)."""
    if name in _BROKEN:
        return None
    ep = plugin_entry_points()[name]
    cls, why = load_plugin(ep)
    if cls is not None:
        try:
            return register(name)(cls)
        except ValueError as err:  # the class is registered in code under another name
            why = str(err)
    _BROKEN[name] = f"plugin {describe(ep)} is left out: {why}"
    if warn:
        warn_left_out(ep, why)
    return None


def list_methods() -> list[str]:
    """Names of all methods (built-in, plugins that load, registered in code), sorted."""
    names = set(BUILTIN_METHODS) | set(_REGISTRY)
    names |= {name for name in plugin_entry_points() if name in _REGISTRY or _load_plugin(name)}
    return sorted(names)


def get_method_class(name: str) -> type:
    """The class registered under ``name``; an unknown name lists the valid ones, a plugin
    that is left out raises its entry point and why (as an :class:`UnknownNameError`, a
    ``KeyError``, not a warning)."""
    plugins = plugin_entry_points()  # a clash with a built-in is an error, always
    if name in _REGISTRY:
        return _REGISTRY[name]
    if name in BUILTIN_METHODS:
        return _load_builtin(name)
    if name in plugins and (cls := _load_plugin(name, warn=False)) is not None:
        return cls
    if name in _BROKEN:
        raise UnknownNameError(f"method {name!r}: {_BROKEN[name]}")
    valid = ", ".join(list_methods()) or "(none registered)"
    raise UnknownNameError(f"unknown method {name!r}; valid methods: {valid}")


def get_method(name: str, **overrides: Any):
    """An instance of method ``name`` with config fields in ``overrides`` replaced.

    An unknown name lists the valid methods; an unknown field lists the valid fields.
    """
    return get_method_class(name)(**overrides)


def _class_source(
    target: str,
) -> tuple[str, str, bool, tuple[str, ...], str | dict[str, str], tuple[tuple[str, str], ...]]:
    """(first docstring line, ``family``, ``uses_task_prior``, ``kinds``, ``aleatoric``,
    ``not_for``) of
    the class ``"module:Class"`` read with :mod:`ast`: ``family = "..."``,
    ``uses_task_prior = True``, ``kinds = ("...",)`` and ``aleatoric = "..."`` in the class
    body, else "other", False, regression and "per point" (a built-in sets them in its own
    body, checked by ``tests/methods/test_plugin.py``); ("", and those defaults) when the
    source cannot be read."""
    default: dict[str, Any] = {
        "family": "other",
        "uses_task_prior": False,
        "kinds": (REGRESSION,),
        "aleatoric": "per point",
        "not_for": (),
    }
    module, _, qualname = target.partition(":")
    try:
        spec = importlib.util.find_spec(module)
        tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    except Exception:  # no source (compiled, missing): no summary
        return "", "other", False, (REGRESSION,), "per point", ()
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == qualname:
            lines = (ast.get_docstring(node) or "").strip().splitlines()
            found = dict(default)
            for item in node.body:
                if (
                    isinstance(item, ast.Assign)
                    and len(item.targets) == 1
                    and isinstance(item.targets[0], ast.Name)
                    and item.targets[0].id in found
                ):
                    try:
                        found[item.targets[0].id] = ast.literal_eval(item.value)
                    except ValueError:  # not a literal: the default stands
                        continue
            return (
                lines[0] if lines else "",
                found["family"],
                found["uses_task_prior"] is True,
                tuple(found["kinds"]),
                found["aleatoric"],
                tuple(tuple(pair) for pair in found["not_for"]),
            )
    return "", "other", False, (REGRESSION,), "per point", ()


def _class_info(name: str, cls: type, origin: str) -> MethodInfo:
    doc = (cls.__doc__ or "").strip().splitlines()
    return MethodInfo(
        name,
        _target(cls),
        origin,
        doc[0] if doc else "",
        cls.family,
        bool(cls.uses_task_prior),
        tuple(getattr(cls, "kinds", (REGRESSION,))),
        getattr(cls, "aleatoric", "per point"),
        tuple(tuple(pair) for pair in getattr(cls, "not_for", ())),
    )


def method_infos() -> list[MethodInfo]:
    """Every usable method's :class:`MethodInfo`, sorted by name.

    Built-ins are read without importing their modules; plugins are loaded (and checked),
    and one that is left out is warned about once and not listed.
    """
    out = {n: MethodInfo(n, t, "built-in", *_class_source(t)) for n, t in BUILTIN_METHODS.items()}
    for name, ep in plugin_entry_points().items():
        cls = _REGISTRY.get(name) or _load_plugin(name)
        if cls is not None:
            dist = getattr(ep, "dist", None)
            origin = f"plugin {dist.name} {dist.version}" if dist is not None else "plugin"
            out[name] = _class_info(name, cls, origin)
    for name, cls in _REGISTRY.items():
        if name not in out:
            out[name] = _class_info(name, cls, "registered in code")
    return [out[name] for name in sorted(out)]
