"""One rule for udora's cache folders (src/udora/caches.py), used by the JAX compilation
cache and the disk cache of expensive tasks."""

from __future__ import annotations

from pathlib import Path

import pytest

from udora.caches import cache_folder
from udora.experiments.tasks.cache import cache_root


@pytest.mark.parametrize("off", ["", "0", "off", " OFF ", "none", "False", "no"])
def test_an_off_value_switches_a_cache_off(off, monkeypatch):
    assert cache_folder(off, "jax") is None
    monkeypatch.setenv("UDORA_TASK_CACHE", off)
    assert cache_root() is None


def test_unset_means_the_xdg_folder_and_a_path_is_that_path(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("UDORA_TASK_CACHE", raising=False)
    assert cache_root() == tmp_path / "xdg" / "udora" / "tasks"
    assert cache_folder(None, "jax") == tmp_path / "xdg" / "udora" / "jax"
    monkeypatch.setenv("UDORA_TASK_CACHE", "~/somewhere")
    assert cache_root() == Path.home() / "somewhere"
