"""Loading a ``udora.methods`` plugin: import it, check its declarations, or leave it out.

A plugin is an entry point ``name = "module:Class"`` of the group ``udora.methods``
(docs/adding_a_method.md). :func:`load_plugin` imports the module, finds the class and
checks what udora builds from it before any fit (:func:`declaration_problems`): a
:class:`~udora.methods.base.UQMethod` subclass with a :class:`~udora.methods.base.MethodConfig`,
a ``family`` from :data:`~udora.methods.base.FAMILIES`, an ``aleatoric`` from
:data:`~udora.methods.base.ALEATORIC`, a default config that builds (every
field has a valid default: ``udora bench`` builds every method's default config), a quick
budget that builds and search-space keys that are fields. A plugin that fails any of these
is left out with one :class:`PluginWarning` naming its entry point and why
(:func:`warn_left_out`), so it never takes the built-ins or other plugins down.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import re
import warnings
from typing import Any

__all__ = ["PluginWarning", "declaration_problems", "describe", "load_plugin", "warn_left_out"]


class PluginWarning(RuntimeWarning):
    """A ``udora.methods`` plugin that cannot be used and is left out (the ``udora`` command
    prints it as one line ``warning: ...``)."""


def describe(ep: importlib.metadata.EntryPoint) -> str:
    """``'name = module:Class' (distribution D V)``: the entry point as a user declared it."""
    dist = getattr(ep, "dist", None)
    where = f" (distribution {dist.name} {dist.version})" if dist is not None else ""
    return f"'{ep.name} = {ep.value}'{where}"


def warn_left_out(ep: importlib.metadata.EntryPoint, why: str) -> None:
    """One :class:`PluginWarning`: the plugin ``ep`` is left out because of ``why``."""
    warnings.warn(
        f"udora.methods plugin {describe(ep)} is left out: {why}", PluginWarning, stacklevel=4
    )


def _config_problem(config_cls: type, overrides: dict[str, Any], what: str) -> str | None:
    from udora.methods.base import ConfigError, make_config

    try:
        make_config(config_cls, overrides)
    except ConfigError as err:
        return f"{what} is refused: {err}"
    return None


def declaration_problems(cls: Any) -> list[str]:
    """What udora cannot use in the method class ``cls`` before any fit; [] when nothing.

    Checked: a ``UQMethod`` subclass whose ``Config`` is a ``MethodConfig``; ``family`` in
    ``FAMILIES``; ``aleatoric`` in ``ALEATORIC`` (or a dict of them by kind); ``libraries``
    a tuple of names; every config field has a default and the default config builds;
    then ``QUICK`` builds; every ``SEARCH_SPACE`` key is a field.
    """
    from udora.methods.base import ALEATORIC, FAMILIES, MethodConfig, UQMethod

    if not (isinstance(cls, type) and issubclass(cls, UQMethod)):
        return [f"{cls!r} is not a subclass of udora.methods.base.UQMethod"]
    config = cls.Config
    if not (isinstance(config, type) and issubclass(config, MethodConfig)):
        return [f"its Config {config!r} is not a subclass of udora.methods.base.MethodConfig"]
    problems = []
    if cls.family not in FAMILIES:
        problems.append(f"family {cls.family!r} is not one of {', '.join(map(repr, FAMILIES))}")
    declared = cls.aleatoric
    values = declared.values() if isinstance(declared, dict) else [declared]
    if not all(isinstance(v, str) and v in ALEATORIC for v in values):
        valid = ", ".join(map(repr, ALEATORIC))
        problems.append(
            f"aleatoric {declared!r} is not one of {valid} (or a dict of them by task kind)"
        )
    libraries = cls.libraries
    if not (isinstance(libraries, tuple) and all(isinstance(x, str) for x in libraries)):
        problems.append(f"libraries {libraries!r} is not a tuple of distribution names")
    required = [name for name, field in config.model_fields.items() if field.is_required()]
    if required:
        fields = f"field{'s' if len(required) > 1 else ''} {', '.join(required)}"
        why = "udora builds every method's default config"
        problems.append(f"its config {config.__qualname__} has no default for {fields} ({why})")
    else:  # QUICK is checked once the defaults it starts from are valid
        quick = (config, dict(config.QUICK), "its quick budget (QUICK)")
        if problem := _config_problem(config, {}, "its default config") or _config_problem(*quick):
            problems.append(problem)
    unknown = sorted(set(config.SEARCH_SPACE) - set(config.model_fields))
    if unknown:
        problems.append(f"its SEARCH_SPACE keys {unknown} are not fields of {config.__qualname__}")
    return problems


# an entry point's value as the packaging spec writes it: module, optional :attr, extras
_TARGET = re.compile(r"\s*(?P<module>[\w.]+)\s*(?::\s*(?P<attr>[\w.]+))?\s*(?:\[.*\])?\s*")


def load_plugin(ep: importlib.metadata.EntryPoint) -> tuple[type | None, str]:
    """``(class, "")`` for a usable plugin, ``(None, why)`` for one that is left out
    (a value that is not ``module:Class`` too: ``EntryPoint.module`` itself would raise)."""
    found = _TARGET.fullmatch(ep.value or "")
    if found is None:
        return None, f"its value {ep.value!r} is not 'module:Class'"
    module, attr = found.group("module"), found.group("attr")
    try:
        obj = importlib.import_module(module)
    except Exception as err:  # any failure of the plugin's own import
        return None, f"importing {module} failed: {type(err).__name__}: {err}"
    if not attr:
        return None, f"the entry point names the module {module}, not 'module:Class'"
    for part in attr.split("."):
        if not hasattr(obj, part):
            return None, f"module {module} has no attribute {attr!r}"
        obj = getattr(obj, part)
    problems = declaration_problems(obj)
    return (None, "; ".join(problems)) if problems else (obj, "")
