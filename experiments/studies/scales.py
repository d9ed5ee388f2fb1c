"""The x scale of a study's slopes, and the one ``udora ablate --factor`` picks by itself.

Without ``--scale`` the levels choose (docs/ablations.md, "Running one"):

- **log2** when every level is a positive number and the levels are geometric (one ratio
  between consecutive levels: 16,32,64 or 10,100,1000) or all powers of two (16,32,128);
  so two positive levels (a ratio, trivially constant) are log2, and their slope is the
  change per doubling;
- **linear** when every level is a number and they are evenly spaced (one difference
  between consecutive levels: 1,2,3 or 0,0.1,0.2), and not log2 by the rule above;
- **ordinal** for the rest: names, mappings, booleans, or numbers neither geometric nor
  evenly spaced (the level's index is its x).
"""

from __future__ import annotations

import math
from itertools import pairwise
from typing import Any

SCALES = ("log2", "linear", "ordinal")
_REL_TOL = 1e-9  # 0.3 / 0.1 is 2.9999999999999996


def is_number(v: Any) -> bool:
    """A finite int or float (booleans are not numbers here)."""
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _constant(steps: list[float]) -> bool:
    return all(math.isclose(s, steps[0], rel_tol=_REL_TOL) for s in steps)


def _power_of_two(v: float) -> bool:
    return math.frexp(v)[0] == 0.5  # 2**k exactly, k of any sign


def choose_scale(values: list[Any]) -> tuple[str, str]:
    """``(scale, why)`` for a study's level values by the rule of the module doc, e.g.
    ``("log2", "geometric levels")``."""
    if not values or not all(is_number(v) for v in values):
        return "ordinal", "levels that are not all numbers"
    x = [float(v) for v in values]
    if all(v > 0 for v in x):
        if _constant([b / a for a, b in pairwise(x)]):
            return "log2", "geometric levels"
        if all(_power_of_two(v) for v in x):
            return "log2", "powers of two"
    if _constant([b - a for a, b in pairwise(x)]):
        return "linear", "evenly spaced levels"
    return "ordinal", "numbers neither geometric nor evenly spaced"
