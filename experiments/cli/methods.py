"""``udora methods [NAME]``: the registered UQ methods, or one method's config. Registered
on the root app by :mod:`udora.experiments.cli.main`."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

console = Console()


def methods_list(
    name: Annotated[
        str | None, typer.Argument(help="A method: show its config, search space, budget.")
    ] = None,
) -> None:
    """List the UQ methods (built-in and plugins), or show one method's config."""
    from udora.methods import registry

    if name is not None:
        _show_method(name)
        return
    table = Table("method", "family", "from", "summary")
    for info in registry.method_infos():  # reads docstrings; imports no method module
        table.add_row(info.name, info.family, info.origin, info.summary)
    Console(width=160).print(table)


def _show_method(name: str) -> None:
    """Print method ``name``'s config fields (type, default), search space, quick budget."""
    import json

    from udora.methods import registry

    cls = registry.get_method_class(name)
    info = next(i for i in registry.method_infos() if i.name == name)  # loaded: listed
    out = Console(width=160)
    plain = {"markup": False, "highlight": False}
    out.print(f"{name}: {info.summary}", **plain)
    out.print(f"class {info.target} ({info.origin})", **plain)
    out.print(f"uses the task prior: {'yes' if cls.uses_task_prior else 'no'}", **plain)
    table = Table("field", "type", "default", title=cls.Config.__name__)
    for field_name, field in cls.Config.model_fields.items():
        kind = getattr(field.annotation, "__name__", None) or str(field.annotation)
        table.add_row(field_name, kind, repr(field.get_default(call_default_factory=True)))
    out.print(table)
    as_json = {"separators": (", ", ": "), "default": str}
    space = json.dumps(cls.Config().search_space(), **as_json)
    out.print(f"search space (default optimizer): {space}", **plain)
    out.print(f"quick budget (--quick): {json.dumps(cls.Config.QUICK, **as_json)}", **plain)
