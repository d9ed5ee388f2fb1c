"""The report's sections, found by name: every ``udora.experiments.<capability>.section``
module's ``SECTION`` (:class:`udora.experiments.results.sections.ReportSection`), in their
``order``. The report's core imports no capability by name, so a new one adds its section
by adding that module (docs/design.md, "Where do I add ...")."""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from functools import cache

import udora.experiments
from udora.experiments.results.sections import ReportSection


@cache
def registered() -> tuple[ReportSection, ...]:
    """Every capability's section, by increasing ``order``. Raises TypeError naming the
    module whose ``SECTION`` is missing or not a ReportSection, and ValueError when two
    sections share a name (their pages would overwrite each other)."""
    found: list[ReportSection] = []
    for info in pkgutil.iter_modules(udora.experiments.__path__):
        name = f"udora.experiments.{info.name}.section"
        if not info.ispkg or importlib.util.find_spec(name) is None:
            continue
        section = getattr(importlib.import_module(name), "SECTION", None)
        if not isinstance(section, ReportSection):
            raise TypeError(f"{name}: expected a SECTION = ReportSection(...), got {section!r}")
        found.append(section)
    names = [s.name for s in found]
    if len(set(names)) != len(names):
        raise ValueError(f"report sections share a name: {sorted(names)}")
    return tuple(sorted(found, key=lambda s: (s.order, s.name)))


def titles() -> dict[str, str]:
    """{name: title} of every registered section, in order."""
    return {s.name: s.title for s in registered()}
