"""Fixtures for the method tests (helpers live in ``method_tasks.py``)."""

from __future__ import annotations

import pytest
from method_tasks import Task, make_task


@pytest.fixture(scope="session")
def task() -> Task:
    """200 noisy points of a smooth function on [-1, 1]^2, with near and far test points."""
    return make_task()
