"""Fixtures for the method tests (helpers live in ``method_tasks.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# pytest's default import mode puts tests/ on sys.path, where tests/methods (no
# __init__.py) would shadow an editable install's `methods` package as a namespace
# package. The repository root first on the path makes the real package win.
_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)
if getattr(sys.modules.get("methods"), "__file__", None) is None:
    sys.modules.pop("methods", None)

from method_tasks import Task, make_task  # noqa: E402


@pytest.fixture(scope="session")
def task() -> Task:
    """200 noisy points of a smooth function on [-1, 1]^2, with near and far test points."""
    return make_task()
