"""``udora sweep run --wandb``: the same sweep created on W&B and run under ``wandb.agent``.

Needs W&B credentials and W&B's servers; offline sweeps are :mod:`udora.experiments.tuning.sweeps`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from udora.experiments.tuning.proposals import sweep_dir, trial_cap
from udora.experiments.tuning.trials import load_trials, run_trial


def wandb_api_key() -> str | None:
    """The W&B API key from ``WANDB_API_KEY`` or the netrc that ``wandb login`` writes
    (``$NETRC`` or ``~/.netrc``, the entry of ``WANDB_BASE_URL``'s host, default
    ``api.wandb.ai``); or None. Reads the file itself: wandb's own accessor prints a
    deprecation warning, and the "no credentials" answer must stay one line."""
    import netrc
    from urllib.parse import urlparse

    key = os.environ.get("WANDB_API_KEY")
    if key:
        return key
    host = urlparse(os.environ.get("WANDB_BASE_URL") or "https://api.wandb.ai").hostname
    path = Path(os.environ.get("NETRC") or Path.home() / ".netrc")
    try:
        entry = netrc.netrc(str(path)).authenticators(host or "api.wandb.ai")
    except (OSError, netrc.NetrcParseError):
        return None
    return (entry[2] or None) if entry else None


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
            run.log(
                {
                    key: record.get(key)
                    for key in ("val_nll", "val_rmse")
                    if record.get(key) is not None
                }
            )
            if on_trial is not None:
                on_trial(record)
            if record["status"] != "ok":
                run.finish(exit_code=1)

    wandb.agent(sweep_id, function=agent_trial, count=cap)
    return sweep_id
