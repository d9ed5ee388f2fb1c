"""JAX's persistent compilation cache, on by default for udora's command line.

Compilation dominates short CPU trainings; the on-disk cache removes it from the second
run on. ``UDORA_JAX_CACHE`` picks the folder; ``off`` (or ``0``, ``none``, empty) turns it
off. Default: ``$XDG_CACHE_HOME/udora/jax`` (``~/.cache/udora/jax``).

This module does not import JAX: commands that never need it (``udora methods``, a bad
argument) must not pay its import. Before JAX is imported the cache is set through the
``JAX_*`` environment variables JAX reads at import; afterwards through ``jax.config``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

_OFF = {"", "0", "off", "none", "false", "no"}
# JAX config names and the values udora sets; the env variable is the upper-case name.
_SETTINGS = {
    "jax_persistent_cache_min_compile_time_secs": 0.1,  # JAX's 1 s misses small trainings
    "jax_persistent_cache_min_entry_size_bytes": 0,
}


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "udora" / "jax"


def _set(name: str, value: object) -> None:
    if "jax" in sys.modules:
        sys.modules["jax"].config.update(name, value)
    elif value is None:
        os.environ.pop(name.upper(), None)
    else:
        os.environ[name.upper()] = str(value)


def configure_compilation_cache(path: str | Path | None = None) -> Path | None:
    """Point JAX's persistent compilation cache at ``path`` (or the env/default folder).

    Returns the folder in use, or None when the cache is switched off. Programs that took
    at least 0.1 s to compile are cached.
    """
    setting = str(path) if path is not None else os.environ.get("UDORA_JAX_CACHE")
    if setting is not None and setting.strip().lower() in _OFF:
        _set("jax_compilation_cache_dir", None)
        return None
    folder = Path(setting).expanduser() if setting else default_cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    _set("jax_compilation_cache_dir", str(folder))
    for name, value in _SETTINGS.items():
        _set(name, value)
    return folder
