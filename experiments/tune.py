"""``udora tune``: one offline sweep per (preset, method), the best config written per pair.

For each pair a bayes sweep (:func:`udora.experiments.tuning.sweep_config`) is written to
``<out>/sweeps/<preset>-<method>.yaml`` and run with :func:`udora.experiments.sweep_run.
run_sweep` under ``<out>/sweeps/`` (resumable: rerunning reads finished trials back). The
result is ``<out>/<preset>/<method>.yaml``: the best trial's values of the searched method
fields (``config``), its objective, the trial counts (ok/failed), the sweep file and its
hash. A method with an empty search space (``gp_oracle``) is passed through: its file says
"no tunable parameters" and holds the default config. ``udora bench --tuned OUT`` reads
these files. Tuning never reads the oracle (validation split of the training sample).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from udora.experiments import sweep_run as sr
from udora.experiments import tuning


def tuned_path(out: str | Path, preset_name: str, method: str) -> Path:
    return Path(out) / preset_name / f"{method}.yaml"


def _write_yaml(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(yaml.safe_dump(data, sort_keys=False))
    tmp.replace(path)


def tune_one(
    preset: str,
    method: str,
    out: str | Path,
    *,
    trials: int = 10,
    jobs: int = 1,
    objective: str = "nll",
    seed: int = 0,
    search: str = "bayes",
    data_dir: str | Path | None = None,
    on_trial: Callable[[dict[str, Any]], None] | None = None,
) -> tuple[Path, dict[str, Any], sr.SweepSummary | None]:
    """Tune ``method`` on ``preset``; returns (tuned file, its content, the sweep summary)."""
    from udora import methods
    from udora.oracle.preset import load_preset

    name = load_preset(preset).name
    target = tuned_path(out, name, method)
    cls = methods.get_method_class(method)
    if not cls.Config().search_space():
        data = {"preset": name, "method": method, "tuned": False,
                "note": "no tunable parameters: the default config",
                "config": {}, "default_config": cls.Config().to_dict()}  # fmt: skip
        _write_yaml(target, data)
        return target, data, None
    config = tuning.sweep_config(
        preset, method, objective=objective, search=search, trials=trials, seed=seed
    )
    config["name"] = f"{name}-{method}-{objective}"
    sweeps_dir = Path(out) / "sweeps"
    sweeps_dir.mkdir(parents=True, exist_ok=True)
    sweep_file = tuning.write_sweep_config(config, sweeps_dir / f"{name}-{method}.yaml")
    config = tuning.load_sweep_config(sweep_file)
    summary = sr.run_sweep(
        config, sweeps_dir, trials=trials, jobs=jobs, data_dir=data_dir, on_trial=on_trial
    )
    if summary.interrupted:
        return target, {}, summary
    best = summary.best
    searched = set(config["parameters"]) - set(tuning.FIXED)
    data = {
        "preset": name,
        "method": method,
        "tuned": best is not None,
        "config": {k: v for k, v in (best or {}).get("overrides", {}).items() if k in searched},
        "objective": objective,
        "metric": tuning.OBJECTIVES[objective],
        "value": None if best is None else best["value"],
        "best_trial": None if best is None else best["k"],
        "trials": {"ok": summary.n_ok, "failed": summary.n_failed},
        "sweep_file": str(sweep_file),
        "sweep_hash": sr.sweep_hash(config),
        "sweep_dir": str(summary.folder),
    }
    if best is None:
        data["note"] = "no trial ok: bench uses the default config"
    _write_yaml(target, data)
    return target, data, summary


def load_tuned(tuned_dir: str | Path, preset_name: str, method: str) -> dict[str, Any] | None:
    """The tuned file of (preset, method) under ``tuned_dir`` with its ``path`` and ``hash``
    (SHA-256 of the file, 12 digits), or None when there is none."""
    import hashlib

    path = tuned_path(tuned_dir, preset_name, method)
    if not path.is_file():
        return None
    text = path.read_text()
    data = yaml.safe_load(text) or {}
    if not isinstance(data, dict) or not isinstance(data.get("config", {}), dict):
        raise ValueError(f"{path}: not a tuned-config file (expected a 'config' mapping)")
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    return {**data, "path": str(path), "hash": digest}
