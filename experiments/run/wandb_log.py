"""Optional Weights & Biases logging of finished runs; offline unless the user is logged in.

Logging never fails a run: any problem (no network, no package, a W&B error) becomes a
warning. Runs are grouped by preset, with the method as the job type.
"""

from __future__ import annotations

import netrc
import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from udora.experiments.run.records import RunRecord, read_run

if TYPE_CHECKING:
    from udora.experiments.run.spec import ResolvedRun


def wandb_mode() -> str:
    """``WANDB_MODE`` if set, else ``online`` with credentials, else ``offline``."""
    if os.environ.get("WANDB_MODE"):
        return os.environ["WANDB_MODE"]
    if os.environ.get("WANDB_API_KEY"):
        return "online"
    try:
        auth = netrc.netrc().authenticators("api.wandb.ai")
    except (OSError, netrc.NetrcParseError):
        auth = None
    return "online" if auth else "offline"


def _figure(curves: dict):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(8, 3.2))
    cov = curves.get("rc_coverage", [])
    for key, label in (("rc_eu", "EU order"), ("rc_eu_oracle", "oracle order")):
        if key in curves:
            ax1.plot(cov, curves[key], label=label)
    ax1.set(xlabel="coverage", ylabel="retained mean EU target", title="risk-coverage")
    ax1.legend()
    for kind in ("au", "eu"):
        est, tgt = curves.get(f"calib_{kind}_estimate"), curves.get(f"calib_{kind}_target")
        if est and tgt:
            ax2.loglog(est, tgt, "o-", label=kind.upper())
    ax2.set(xlabel="mean estimate (bin)", ylabel="mean oracle target", title="calibration")
    ax2.legend()
    fig.tight_layout()
    return fig


def _config(record: RunRecord, run: ResolvedRun | None) -> dict:
    """The W&B config of a run: from the resolved run when given, else from result.json."""
    if run is not None:
        return {
            "preset": run.preset.name,
            "method": run.method,
            "seed": run.seed,
            **run.config.to_dict(),
            "overrides": run.overrides.flat(),
            "label": run.label,
            "config_hash": run.config_hash,
        }
    return {
        "preset": record.preset,
        "method": record.method,
        "seed": record.seed,
        **record.config,
        "overrides": record.overrides,
        "label": record.label,
        "config_hash": record.config_hash,
    }


def log_run(run_dir: str | Path, run: ResolvedRun | None = None, project: str = "udora") -> bool:
    """Log one run folder's config, metrics and a figure; returns True when logged.

    ``run`` is the resolved run that wrote the folder (its config is logged); without it
    the config is read from the folder's result.json.
    """
    try:
        import wandb

        found = read_run(run_dir, verify_files=False)
        if found.record is None:
            raise ValueError(f"its result.json {found.problem}")
        record = found.record
        config = _config(record, run)
        wb = wandb.init(
            project=project,
            group=config["preset"],
            job_type=config["method"],
            name=f"{config['preset']}-{config['method']}-{config['config_hash']}-s{config['seed']}",
            config=config,
            dir=str(run_dir),
            mode=wandb_mode(),
            settings=wandb.Settings(silent=True),
        )
        metrics = {k: v for k, v in record.metrics.items() if v is not None}
        metrics["status_ok"] = float(record.status == "ok")
        if record.status == "ok":
            fig = _figure(record.curves)
            metrics["curves"] = wandb.Image(fig)
        wb.log(metrics)
        wb.finish()
        return True
    except Exception as err:  # logging is best effort: never take a run down
        warnings.warn(
            f"W&B logging of {run_dir} skipped: {type(err).__name__}: {err}", stacklevel=2
        )
        return False
