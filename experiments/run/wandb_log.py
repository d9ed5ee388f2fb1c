"""Optional Weights & Biases logging of finished runs; offline unless the user is logged in.

Logging never fails a run: any problem (no network, no package, a W&B error) becomes a
warning. Runs are grouped by preset, with the method as the job type.

Offline (``WANDB_MODE=offline``, or no credentials) every run of one command goes to one
folder, ``<WANDB_DIR or the command's folder>/wandb/offline-run-*``, and the command ends
with one line (:func:`offline_note`) naming it and the ``wandb sync`` command that uploads
them later; ``udora bench --wandb`` and ``udora sweep run --wandb`` say the same.
"""

from __future__ import annotations

import netrc
import os
import shlex
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from udora.experiments.run.records import RunRecord, read_run
from udora.experiments.run.words import plural

if TYPE_CHECKING:
    from udora.experiments.run.spec import ResolvedRun


def wandb_api_key() -> str | None:
    """The W&B API key from ``WANDB_API_KEY`` or the netrc that ``wandb login`` writes
    (``$NETRC`` or ``~/.netrc``, the entry of ``WANDB_BASE_URL``'s host, default
    ``api.wandb.ai``); or None. Reads the file itself: wandb's own accessor prints a
    deprecation warning, and the "no credentials" answer must stay one line."""
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


def wandb_mode() -> str:
    """``WANDB_MODE`` if set (``dryrun`` is ``offline``), else ``online`` with credentials
    (:func:`wandb_api_key`), else ``offline``."""
    mode = os.environ.get("WANDB_MODE")
    if mode:
        return "offline" if mode == "dryrun" else mode
    return "online" if wandb_api_key() else "offline"


def wandb_dir(default: str | Path) -> Path:
    """The folder W&B writes its ``wandb/`` folder in: ``WANDB_DIR`` when set, else
    ``default`` (the results or sweep folder), absolute."""
    return Path(os.environ.get("WANDB_DIR") or default).resolve()


def offline_runs(default: str | Path) -> set[Path]:
    """The offline runs in the W&B folder of ``default`` (:func:`wandb_dir`)."""
    return set((wandb_dir(default) / "wandb").glob("offline-run-*"))


def offline_note(default: str | Path, before: set[Path]) -> str | None:
    """The line a command with ``--wandb`` ends with when W&B is not online: where the
    offline runs it logged went (those not in ``before``) and the command that uploads
    them; that nothing was logged when W&B is disabled; None online."""
    mode = wandb_mode()
    if mode == "disabled":
        return "W&B is disabled (WANDB_MODE=disabled): nothing was logged"
    if mode != "offline":
        return None
    folder = wandb_dir(default) / "wandb"
    new = len(offline_runs(default) - before)
    return (
        f"W&B offline: {plural(new, 'run')} logged to {folder}; upload them later with: "
        f"wandb sync {shlex.quote(str(folder))}/offline-run-*"
    )


def log_values(
    default: str | Path,
    *,
    name: str,
    group: str,
    job_type: str,
    config: dict[str, Any],
    values: dict[str, Any],
    project: str = "udora",
) -> None:
    """One W&B run with ``config`` and one log of ``values`` (raises what W&B raises),
    written under :func:`wandb_dir` ``(default)`` in :func:`wandb_mode`."""
    import wandb

    wb = wandb.init(
        project=project,
        group=group,
        job_type=job_type,
        name=name,
        config=config,
        dir=str(wandb_dir(default)),
        mode=wandb_mode(),
        settings=wandb.Settings(silent=True),
    )
    wb.log(values)
    wb.finish()


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


def log_run(
    run_dir: str | Path,
    run: ResolvedRun | None = None,
    project: str = "udora",
    root: str | Path | None = None,
) -> bool:
    """Log one run folder's config, metrics and a figure; returns True when logged.

    ``run`` is the resolved run that wrote the folder (its config is logged); without it
    the config is read from the folder's result.json. W&B writes under ``WANDB_DIR``, else
    ``root`` (a grid passes its results folder), else ``run_dir``.
    """
    try:
        import wandb

        found = read_run(run_dir, verify_files=False)
        if found.record is None:
            raise ValueError(f"its result.json {found.problem}")
        record = found.record
        config = _config(record, run)
        metrics = {k: v for k, v in record.metrics.items() if v is not None}
        metrics["status_ok"] = float(record.status == "ok")
        if record.status == "ok":
            fig = _figure(record.curves)
            metrics["curves"] = wandb.Image(fig)
        log_values(
            run_dir if root is None else root,
            name=f"{config['preset']}-{config['method']}-{config['config_hash']}-s{config['seed']}",
            group=config["preset"],
            job_type=config["method"],
            config=config,
            values=metrics,
            project=project,
        )
        return True
    except Exception as err:  # logging is best effort: never take a run down
        warnings.warn(
            f"W&B logging of {run_dir} skipped: {type(err).__name__}: {err}", stacklevel=2
        )
        return False
