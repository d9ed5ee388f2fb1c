"""``udora tune``: one offline sweep per (preset, method), the best config written per pair.

For each pair a bayes sweep (:func:`udora.experiments.tuning.sweep_file.sweep_config`) is
written to ``<out>/sweeps/<preset>-<method>.yaml``; all sweeps run together under
``<out>/sweeps/`` by :func:`udora.experiments.tuning.sweeps.run_sweeps`, each fully sequential
(one trial in flight, every proposal sees every earlier result) while the ``jobs``
workers are shared by the sweeps (resumable: rerunning reads finished trials back). The
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

from udora.experiments.grid.executors import ExecutorSpec
from udora.experiments.run.overrides import Overrides
from udora.experiments.tuning import protocol as tuning
from udora.experiments.tuning import sweep_file as sc
from udora.experiments.tuning import sweeps as sr
from udora.experiments.tuning.proposals import SweepSummary, sweep_dir, sweep_hash
from udora.experiments.tuning.tuned_files import protocol_of, tuned_path
from udora.oracle.atomic import write_text


def _write_yaml(path: Path, data: dict[str, Any]) -> None:
    write_text(path, yaml.safe_dump(data, sort_keys=False))


def prepare(
    preset: str,
    method: str,
    out: str | Path,
    *,
    trials: int = 10,
    objective: str = "nll",
    seed: int = 0,
    search: str = "bayes",
    fixed: Overrides | None = None,
) -> tuple[Path, dict[str, Any] | None, dict[str, Any] | None]:
    """(tuned file, its content when final already, the validated sweep config or None).

    ``fixed`` method fields are held at their values and written into the tuned config
    (:func:`udora.experiments.tuning.sweep_file.sweep_config`). A method with no search space
    gets its pass-through file now (its config: the fixed fields) and no sweep.
    """
    from udora import methods
    from udora.oracle.preset import load_preset

    loaded = load_preset(preset)
    name, kind = loaded.name, loaded.kind
    target = tuned_path(out, name, method)
    cls = methods.get_method_class(method)
    held = fixed or Overrides()
    method_held, preset_held = dict(held.method), dict(held.task)
    if not {k for k in cls.Config().search_space_on(kind) if k not in method_held}:
        from udora.methods.base import make_config

        default = make_config(cls.Config, method_held).to_dict()
        data = {
            "preset": name,
            "method": method,
            "tuned": False,
            "note": "no tunable parameters: the default config",
            "config": method_held,
            "default_config": default,
            **({"preset_fields": preset_held} if preset_held else {}),
        }
        _write_yaml(target, data)
        return target, data, None
    config = sc.sweep_config(
        preset, method, objective=objective, search=search, trials=trials, seed=seed, fixed=held
    )
    config["name"] = f"{name}-{method}-{objective}"
    sweeps_dir = Path(out) / "sweeps"
    sweeps_dir.mkdir(parents=True, exist_ok=True)
    sweep_file = sc.write_sweep_config(config, sweeps_dir / f"{name}-{method}.yaml")
    return target, None, sc.load_sweep_config(sweep_file)


def finish(
    target: Path,
    config: dict[str, Any],
    summary: SweepSummary,
    sweep_file: str | Path | None = None,
) -> dict[str, Any]:
    """Write the tuned file of a finished sweep; returns its content. ``sweep_file``
    (default: ``udora tune``'s, beside the sweep folder) is the file the sweep ran from."""
    params = config["parameters"]
    objective = params["objective"]["value"]
    best = summary.best
    searched = {k for k in params if k not in sc.FIXED and not k.startswith("preset.")}
    method = params["method"]["value"]
    sweep_file = sweep_file or Path(summary.folder).parent / f"{target.parent.name}-{method}.yaml"
    data = {
        "preset": target.parent.name,
        "method": method,
        "tuned": best is not None,
        "config": {k: v for k, v in (best or {}).get("overrides", {}).items() if k in searched},
        "objective": objective,
        "metric": tuning.OBJECTIVES[objective],
        "value": None if best is None else best["value"],
        "best_trial": None if best is None else best["k"],
        "trials": {"ok": summary.n_ok, "failed": summary.n_failed},
        "sweep_file": str(sweep_file),
        "sweep_hash": sweep_hash(config),
        "sweep_dir": str(summary.folder),
        "protocol": protocol_of(config),
    }
    if best is None:
        data["note"] = "no trial ok: bench uses the default config"
    _write_yaml(target, data)
    return data


def tuned_from_sweep(
    tuned_dir: str | Path,
    config: dict[str, Any],
    summary: SweepSummary,
    sweep_file: str | Path,
    trials: int | None = None,
) -> tuple[Path, dict[str, Any]]:
    """``udora sweep run --tuned-out DIR``: write the best trial of a finished sweep as
    ``DIR/<preset>/<method>.yaml``, the file :func:`finish` writes for ``udora tune``, so
    ``udora bench --tuned DIR`` reads it. ``trials`` (``--trials``, default its
    ``run_cap``) is the protocol's trial count. Returns (path, content)."""
    from udora.experiments.tuning.proposals import trial_cap
    from udora.oracle.preset import load_preset

    params = config["parameters"]
    target = tuned_path(
        tuned_dir, load_preset(params["preset"]["value"]).name, params["method"]["value"]
    )
    ran = {**config, "run_cap": trial_cap(config, trials)}  # the hash leaves run_cap out
    return target, finish(target, ran, summary, sweep_file)


def tune_many(
    pairs: list[tuple[str, str]],
    out: str | Path,
    *,
    trials: int = 10,
    jobs: int = 1,
    objective: str = "nll",
    seed: int = 0,
    search: str = "bayes",
    fixed: Overrides | dict[str, Any] | None = None,
    data_dir: str | Path | None = None,
    on_trial: Callable[[dict[str, Any]], None] | None = None,
    on_tuned: Callable[[Path, dict[str, Any], SweepSummary | None], None] | None = None,
    executor: ExecutorSpec | None = None,
) -> list[SweepSummary]:
    """Tune every (preset, method) of ``pairs``: one sweep each, all over ``jobs`` workers.

    ``fixed`` (:class:`Overrides`, or flat ``--set`` keys) holds method fields at values
    for every sweep (``optimizer: sgd``), with ``<method>.<field>`` keys for one method, as
    ``bench --set``, and preset fields (``preset.truth: warped``) for every task tuned on.
    Every sweep file is written (and every bad name raised) before anything runs.
    ``on_tuned(path, content, summary)`` follows each tuned file as it is written (summary
    None for a pass-through). Returns the sweep summaries (interrupted ones after Ctrl-C).
    ``executor`` (default: the local one with ``jobs``) says where trials execute.
    """
    names = sorted({m for _, m in pairs})
    kw = {"trials": trials, "objective": objective, "seed": seed, "search": search}
    held = Overrides.of(fixed)
    prepared = [prepare(p, m, out, **kw, fixed=held.for_method(m, names)) for p, m in pairs]
    targets = {}
    configs = []
    for target, data, config in prepared:
        if config is None:
            if on_tuned is not None:
                on_tuned(target, data, None)
            continue
        targets[sweep_dir(config, Path(out) / "sweeps")] = (target, config)
        configs.append(config)

    def done(summary: SweepSummary) -> None:
        target, config = targets[summary.folder]
        data = finish(target, config, summary)
        if on_tuned is not None:
            on_tuned(target, data, summary)

    return sr.run_sweeps(
        configs,
        Path(out) / "sweeps",
        trials=trials,
        jobs=jobs,
        per_sweep=1,
        data_dir=data_dir,
        on_trial=on_trial,
        on_done=done,
        executor=executor,
    )
