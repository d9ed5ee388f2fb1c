"""The report's sections, found by name: every ``udora.experiments.<capability>.section``
module's ``SECTION`` (:class:`udora.experiments.results.sections.ReportSection`), and the
sections registered in code (:func:`register_section`: a task kind's, docs/design.md,
"Task kinds"), in their ``order``. The report's core imports no capability by name, so a
new one adds its section by adding that module (docs/design.md, "Where do I add ...")."""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from functools import cache

import udora.experiments
from udora.experiments.results.sections import ReportSection

_IN_CODE: dict[str, ReportSection] = {}


def register_section(section: ReportSection) -> ReportSection:
    """Add a section that is not a capability's module (a task kind's report section)."""
    if not isinstance(section, ReportSection):
        raise TypeError(f"expected a ReportSection, got {section!r}")
    _IN_CODE[section.name] = section
    return section


def unregister_section(name: str) -> None:
    """Drop a section added by :func:`register_section`."""
    _IN_CODE.pop(name, None)


def registered() -> tuple[ReportSection, ...]:
    """Every section, by increasing ``order``. Raises TypeError naming the module whose
    ``SECTION`` is missing or not a ReportSection, and ValueError when two sections share
    a name (their pages would overwrite each other)."""
    found = [*_capabilities(), *_IN_CODE.values()]
    names = [s.name for s in found]
    if len(set(names)) != len(names):
        raise ValueError(f"report sections share a name: {sorted(names)}")
    return tuple(sorted(found, key=lambda s: (s.order, s.name)))


@cache
def _capabilities() -> tuple[ReportSection, ...]:
    """The capabilities' sections (imported once)."""
    found: list[ReportSection] = []
    for info in pkgutil.iter_modules(udora.experiments.__path__):
        name = f"udora.experiments.{info.name}.section"
        if not info.ispkg or importlib.util.find_spec(name) is None:
            continue
        section = getattr(importlib.import_module(name), "SECTION", None)
        if not isinstance(section, ReportSection):
            raise TypeError(f"{name}: expected a SECTION = ReportSection(...), got {section!r}")
        found.append(section)
    return tuple(found)


def titles() -> dict[str, str]:
    """{name: title} of every registered section, in order."""
    return {s.name: s.title for s in registered()}
