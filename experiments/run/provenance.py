"""What ran a run: the code and the compute, recorded in every ``result.json``.

Two runs of the same task and config agree to the last digit only on the same code and
the same cores per run (docs/scaling.md, "Another number of cores per run, another
rounding"), so a record says both, and a published row can be checked against a fresh run
(docs/release.md):

- :func:`code_identity`: ``source_sha256``, one SHA-256 over udora's own source files
  (every ``.py`` and ``.yaml`` of ``udora`` and its packages, by path relative to
  ``udora``), the same for a wheel and for a checkout of the same commit; ``commit`` and
  ``dirty`` when the sources are a git checkout (else None).
- :func:`versions`: the versions of udora, JAX and the distributions a method class
  declares in ``libraries`` (:class:`udora.methods.base.UQMethod`); never guessed from
  its name.
- :func:`compute`: ``cpus``, the cores this process may run on (a pinned grid worker: 1);
  ``threads``, the caps its libraries were started with (``OMP_NUM_THREADS``,
  ``OPENBLAS_NUM_THREADS``, XLA's multi-threaded Eigen); ``jax_backend``; ``machine``.

Each is computed once per process.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.metadata
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

PACKAGES = ("oracle", "scoring", "methods", "experiments", "presets")
"""udora's source packages (``udora.<name>``); ``udora.release`` holds data, not code."""


def _source_files() -> list[tuple[str, Path]]:
    """``(name relative to udora, path)`` of every source file, sorted by name."""
    top = Path(importlib.import_module("udora").__file__).parent
    # udora/ itself: its own modules only (in a wheel the packages above are inside it)
    files = [(path.name, path) for path in top.glob("*.py")]
    for package in PACKAGES:
        for root in importlib.import_module(f"udora.{package}").__path__:
            base = Path(root)
            for path in base.rglob("*"):
                if path.suffix in (".py", ".yaml") and "__pycache__" not in path.parts:
                    files.append((f"{package}/{path.relative_to(base).as_posix()}", path))
    return sorted(files)


def _git(folder: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), *args],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


@functools.cache
def code_identity() -> dict[str, Any]:
    """``{"source_sha256", "commit", "dirty"}`` of the udora this process imported (module
    doc); ``commit`` and ``dirty`` are None outside a git checkout."""
    digest = hashlib.sha256()
    files = _source_files()
    for name, path in files:
        digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    folder = Path(importlib.import_module("udora.oracle").__path__[0]).parent
    # a checkout of udora itself, not a wheel inside some other repository's tree
    ours = _git(folder, "ls-files", "--error-unmatch", "oracle/task.py") is not None
    commit = _git(folder, "rev-parse", "HEAD") if ours else None
    dirty = None
    if commit is not None:
        top = Path(importlib.import_module("udora").__file__).parent.relative_to(folder)
        changed = _git(folder, "status", "--porcelain", "--", top.as_posix(), *PACKAGES)
        dirty = None if changed is None else bool(changed)
    return {"source_sha256": digest.hexdigest(), "commit": commit, "dirty": dirty}


@functools.cache
def versions(libraries: tuple[str, ...] = ()) -> dict[str, str]:
    """``{distribution: version}`` of udora, jax and ``libraries`` (a method class's
    declared ``libraries``), ``"not installed"`` for one that is not."""
    out = {}
    for dist in dict.fromkeys(("udora", "jax", *libraries)):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


@functools.cache
def compute() -> dict[str, Any]:
    """``{"cpus", "threads", "jax_backend", "machine"}`` of this process (module doc)."""
    import jax

    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity on this platform: every core
        cpus = os.cpu_count() or 1
    flags = os.environ.get("XLA_FLAGS", "")
    threads = {
        "omp": os.environ.get("OMP_NUM_THREADS"),
        "openblas": os.environ.get("OPENBLAS_NUM_THREADS"),
        "xla_multi_thread_eigen": "xla_cpu_multi_thread_eigen=false" not in flags,
    }
    return {
        "cpus": cpus,
        "threads": threads,
        "jax_backend": jax.default_backend(),
        "machine": platform.machine(),
    }
