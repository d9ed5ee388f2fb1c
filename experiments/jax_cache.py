"""JAX's persistent compilation cache, on by default for udora's command line.

Compilation dominates short CPU trainings; the on-disk cache removes it from the second
run on. ``UDORA_JAX_CACHE`` picks the folder; ``off`` (or ``0``, ``none``, empty) turns it
off. Default: ``$XDG_CACHE_HOME/udora/jax`` (``~/.cache/udora/jax``).
"""

from __future__ import annotations

import os
from pathlib import Path

import jax

_OFF = {"", "0", "off", "none", "false", "no"}


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "udora" / "jax"


def configure_compilation_cache(path: str | Path | None = None) -> Path | None:
    """Point JAX's persistent compilation cache at ``path`` (or the env/default folder).

    Returns the folder in use, or None when the cache is switched off. Programs that took
    at least 0.1 s to compile are cached (JAX's default of 1 s misses most small trainings).
    """
    setting = str(path) if path is not None else os.environ.get("UDORA_JAX_CACHE")
    if setting is not None and setting.strip().lower() in _OFF:
        jax.config.update("jax_compilation_cache_dir", None)
        return None
    folder = Path(setting).expanduser() if setting else default_cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.1)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return folder
