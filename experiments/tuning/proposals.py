"""A sweep's identity (its hash and folder), its summary, and the ``sweeps`` package's next
proposals given the finished trials (:mod:`udora.experiments.tuning.sweeps` runs them)."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from udora.errors import UserError
from udora.experiments.run.words import plural

DEFAULT_TRIALS = 20  # when neither --trials nor the YAML's run_cap says


def sweep_hash(config: dict[str, Any]) -> str:
    """12 hex digits of the SHA-256 of the canonical JSON of ``config`` without ``run_cap``."""
    body = {k: v for k, v in config.items() if k != "run_cap"}
    blob = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def sweep_dir(config: dict[str, Any], out: str | Path) -> Path:
    """``<out>/<name>-<hash>``; characters other than letters, digits, ``._-`` become ``_``."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", str(config.get("name") or "sweep"))
    return Path(out) / f"{name}-{sweep_hash(config)}"


@dataclass
class SweepSummary:
    """What a sweep run did and found; ``trials`` are every finished trial record."""

    folder: Path
    trials: list[dict[str, Any]] = field(default_factory=list)
    ran: int = 0  # by this invocation
    interrupted: bool = False
    goal: str = "minimize"

    @property
    def n_ok(self) -> int:
        return sum(t["status"] == "ok" for t in self.trials)

    @property
    def n_failed(self) -> int:
        return sum(t["status"] != "ok" for t in self.trials)

    @property
    def best(self) -> dict[str, Any] | None:
        ok = [t for t in self.trials if t["status"] == "ok"]
        if not ok:
            return None
        sign = 1 if self.goal == "minimize" else -1
        return min(ok, key=lambda t: (sign * t["value"], t["k"]))

    def line(self) -> str:
        best = self.best
        tail = "no trial ok"
        if best:
            over = json.dumps(best["overrides"], default=str)
            tail = f"best {best['metric']}={best['value']:.6g} (trial-{best['k']}) {over}"

        return (
            f"{plural(len(self.trials), 'trial')} ({self.n_ok} ok, {self.n_failed} failed, "
            f"{self.ran} ran now); {tail}; in {self.folder}"
        )


def disk_summary(config: dict[str, Any], out: str | Path) -> SweepSummary:
    """The summary of the trials on disk of ``config``'s sweep under ``out`` (``ran`` 0)."""
    from udora.experiments.tuning.trials import load_trials

    folder = sweep_dir(config, out)
    goal = config.get("metric", {}).get("goal", "minimize")
    return SweepSummary(folder, load_trials(folder), goal=goal)


def _as_sweep_runs(trials: list[dict[str, Any]], metric: str) -> list[Any]:
    from sweeps import RunState, SweepRun

    runs = []
    for t in trials:
        ok = t["status"] == "ok"
        runs.append(
            SweepRun(
                name=f"trial-{t['k']}",
                state=RunState.finished if ok else RunState.failed,
                config={key: {"value": value} for key, value in t["params"].items()},
                summary_metrics={metric: t["value"]} if ok else {},
            )
        )
    return runs


def propose(config: dict[str, Any], trials: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """Up to ``n`` flat parameter dicts proposed by ``sweeps`` given ``trials`` (fewer when a
    grid is exhausted). Seeded by the sweep hash and ``len(trials)``.

    ``sweeps`` draws from the two global generators, numpy's (bayes) and Python's
    ``random`` (random search, grid order): both are seeded here and put back after, so
    the same sweep and trials give the same proposals and no other code is reseeded.
    """
    import random
    import warnings

    with warnings.catch_warnings():  # pydantic's V2 notice on importing sweeps 0.2
        warnings.simplefilter("ignore")
        import sweeps

    metric = config.get("metric", {}).get("name", "val_nll")
    search_config = {k: v for k, v in config.items() if k not in ("run_cap", "command")}
    seed = (int(sweep_hash(config)[:8], 16) + 7919 * len(trials)) % 2**32
    state = np.random.get_state()  # noqa: NPY002 (sweeps draws from the global RNGs)
    python_state = random.getstate()
    np.random.seed(seed)  # noqa: NPY002
    random.seed(seed)
    try:
        with warnings.catch_warnings():  # sklearn's GP convergence notes in bayes search
            warnings.simplefilter("ignore")
            proposals = sweeps.next_runs(search_config, _as_sweep_runs(trials, metric), n=n)
    finally:
        np.random.set_state(state)  # noqa: NPY002
        random.setstate(python_state)
    return [{k: _plain(v["value"]) for k, v in p.config.items()} for p in proposals if p]


def _plain(value: Any) -> Any:
    """numpy scalars (from the search) as Python values, as they read back from JSON."""
    return value.item() if isinstance(value, np.generic) else value


def trial_cap(config: dict[str, Any], trials: int | None) -> int:
    if trials is None:
        return int(config.get("run_cap") or DEFAULT_TRIALS)
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise UserError(f"--trials: expected a positive integer, got {trials!r}")
    return trials
