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
import tempfile
import warnings
from pathlib import Path

from udora.caches import cache_folder

# JAX config names and the values udora sets; the env variable is the upper-case name.
_SETTINGS = {
    "jax_persistent_cache_min_compile_time_secs": 0.1,  # JAX's 1 s misses small trainings
    "jax_persistent_cache_min_entry_size_bytes": 0,
}


_WARNED: set[str] = set()  # folders already warned about in this process


class CacheUnusableWarning(UserWarning):
    """The compilation cache folder cannot be used; commands run without it."""


def _unusable(folder: Path) -> str:
    """Why ``folder`` cannot hold the cache ("" when it can): it is created if absent and
    a file is written and removed in it."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except FileExistsError:
        return "is a file, not a folder"
    except OSError as err:
        return f"is not usable ({err.strerror or type(err).__name__})"
    return ""


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
    at least 0.1 s to compile are cached. A folder that cannot be used (a file, not
    writable) turns the cache off with one :class:`CacheUnusableWarning` naming it, once
    per process: a command runs without the cache rather than failing.
    """
    setting = str(path) if path is not None else os.environ.get("UDORA_JAX_CACHE")
    folder = cache_folder(setting, "jax")
    if folder is None:
        _set("jax_compilation_cache_dir", None)
        return None
    why = _unusable(folder)
    if why:
        if str(folder) not in _WARNED:
            _WARNED.add(str(folder))
            warnings.warn(
                f"JAX compilation cache {folder} {why}; running without the cache "
                "(set UDORA_JAX_CACHE to a writable folder, or off)",
                CacheUnusableWarning,
                stacklevel=2,
            )
        _set("jax_compilation_cache_dir", None)
        os.environ["UDORA_JAX_CACHE"] = "off"  # spawned workers inherit it: no repeat
        return None
    _set("jax_compilation_cache_dir", str(folder))
    for name, value in _SETTINGS.items():
        _set(name, value)
    return folder
