"""``udora sweep run --wandb``: online, the same sweep created on W&B and run under
``wandb.agent``; offline (``WANDB_MODE=offline``, or no credentials), the sweep runs here
as without ``--wandb`` (:mod:`udora.experiments.tuning.sweeps`) and each trial is logged
as an offline W&B run (:func:`log_trial`), as ``udora bench --wandb`` logs its runs.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from udora.experiments.run.wandb_log import log_values, wandb_api_key
from udora.experiments.tuning.proposals import sweep_dir, trial_cap
from udora.experiments.tuning.trials import load_trials, run_trial, validation_fields

__all__ = ["log_trial", "run_on_wandb", "wandb_api_key"]


def log_trial(record: dict[str, Any], config: dict[str, Any], out: str | Path) -> bool:
    """Log one finished trial of the sweep ``config`` as a W&B run: its parameters as the
    config, its validation scores (what an agent's run logs online), grouped by the
    sweep; W&B writes under ``WANDB_DIR``, else the sweep's folder under ``out``. Never
    raises: a problem is a warning and False."""
    folder = sweep_dir(config, out)
    try:
        values = validation_fields(record)
        values["status_ok"] = float(record["status"] == "ok")
        params = record["params"]
        log_values(
            folder,
            name=f"{folder.name}-trial-{record['k']}",
            group=folder.name,
            job_type=str(params.get("method", "sweep")),
            config={**params, "trial": record["k"]},
            values=values,
        )
        return True
    except Exception as err:  # logging is best effort: never take a sweep down
        warnings.warn(
            f"W&B logging of trial-{record.get('k')} skipped: {type(err).__name__}: {err}",
            stacklevel=2,
        )
        return False


def run_on_wandb(
    config: dict[str, Any],
    out: str | Path,
    *,
    trials: int | None = None,
    data_dir: str | Path | None = None,
    on_trial: Callable[[dict[str, Any]], None] | None = None,
) -> str:
    """Create the sweep on W&B from the same YAML and run ``trials`` under ``wandb.agent``.

    Each agent call runs the same :func:`run_trial` (also written under the sweep folder,
    numbered after the trials there) and logs its objective. Returns the sweep id.
    """
    import wandb

    cap = trial_cap(config, trials)
    folder = sweep_dir(config, out)
    folder.mkdir(parents=True, exist_ok=True)
    dd = str(data_dir) if data_dir is not None else os.environ.get("UDORA_DATA_DIR")
    sweep_id = wandb.sweep({k: v for k, v in config.items() if k != "command"})

    def agent_trial() -> None:
        with wandb.init() as run:
            params = dict(run.config)
            used = {t["k"] for t in load_trials(folder)}
            k = next(i for i in range(len(used) + 1) if i not in used)
            record = run_trial(folder, k, params, dd)
            run.log(validation_fields(record))
            if on_trial is not None:
                on_trial(record)
            if record["status"] != "ok":
                run.finish(exit_code=1)

    wandb.agent(sweep_id, function=agent_trial, count=cap)
    return sweep_id
