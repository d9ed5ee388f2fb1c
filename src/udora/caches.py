"""udora's cache folders, one rule for all of them: a setting (an environment variable or
an option) names the folder, one of :data:`OFF` switches the cache off, and unset means
``$XDG_CACHE_HOME/udora/<leaf>`` (``~/.cache/udora/<leaf>``). The JAX compilation cache
(``UDORA_JAX_CACHE``, leaf ``jax``) and the disk cache of expensive tasks
(``UDORA_TASK_CACHE``, leaf ``tasks``) use it."""

from __future__ import annotations

import os
from pathlib import Path

OFF = frozenset({"", "0", "off", "none", "false", "no"})


def cache_folder(setting: str | None, leaf: str) -> Path | None:
    """The folder ``setting`` names (``~`` expanded), None when it is one of :data:`OFF`,
    the default folder of ``leaf`` when it is None."""
    if setting is not None:
        return None if setting.strip().lower() in OFF else Path(setting).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "udora" / leaf
