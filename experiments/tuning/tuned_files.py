"""What ``udora bench --tuned`` reads: the tuned files ``udora tune`` writes
(``<out>/<preset>/<method>.yaml``), their tuning protocol, and the preset fields their
trials held, which a run must hold too (docs/running.md, "Tuning under another ground
truth")."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from udora.errors import UserError
from udora.experiments.run.overrides import Overrides
from udora.experiments.run.spec import tuned_source
from udora.experiments.tuning import sweep_file as sc
from udora.names import check_name, inside
from udora.oracle import reading


def tuned_path(out: str | Path, preset_name: str, method: str) -> Path:
    """``<out>/<preset>/<method>.yaml``; both names must be names and the file must stay
    inside ``out`` (:mod:`udora.names`)."""
    path = (
        Path(out)
        / check_name(preset_name, "preset name")
        / f"{check_name(method, 'method name')}.yaml"
    )
    inside(out, path)
    return path


def load_tuned(tuned_dir: str | Path, preset_name: str, method: str) -> dict[str, Any] | None:
    """The tuned file of (preset, method) under ``tuned_dir`` with its ``path`` and ``hash``
    (SHA-256 of the file, 12 digits), or None when there is none."""
    import hashlib

    path = tuned_path(tuned_dir, preset_name, method)
    if not path.is_file():
        return None
    text = reading.text(path)
    if not text.strip():
        raise UserError(f"{path}: is empty; rerun `udora tune` for it, or remove it")
    try:
        data = reading.yaml_value(path, text)
    except reading.BadFile as err:
        raise UserError(f"{err}; rerun `udora tune` for it") from None
    if not isinstance(data, dict) or not isinstance(data.get("config", {}), dict):
        raise UserError(f"{path}: not a tuned-config file (expected a 'config' mapping)")
    for key, expected in (("method", method), ("preset", preset_name)):
        if data.get(key, expected) != expected:
            raise UserError(
                f"{path}: a tuned file of {key} {data[key]!r}, found where the "
                f"one of {expected!r} belongs"
            )
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    return {**data, "path": str(path), "hash": digest}


def protocol_of(config: dict[str, Any]) -> dict[str, Any]:
    """The tuning protocol of a sweep config: what is the same for every preset it tunes.

    ``{"search", "trials", "objective", "seed", "tuning_val_fraction"}``, ``fixed``
    (the method fields held at a value, when any) and ``preset`` (the preset fields the
    trials' tasks held, ``{"truth": "warped"}``, when any); a tuned run's
    config in the report is its method under this protocol (``method@tuned``), since its
    values differ per preset by design.
    """
    params = config.get("parameters", {})

    def fixed(key: str, default: Any) -> Any:
        spec = params.get(key)
        return spec.get("value", default) if isinstance(spec, dict) else default

    held = {
        k: spec["value"]
        for k, spec in params.items()
        if isinstance(spec, dict)
        and "value" in spec
        and k not in sc.FIXED
        and not k.startswith("preset.")
    }
    preset = sc.preset_fields(params)
    return {
        "search": config.get("method"),
        "trials": config.get("run_cap"),
        "objective": fixed("objective", "nll"),
        "seed": fixed("seed", 0),
        "tuning_val_fraction": fixed("tuning_val_fraction", fixed("val_fraction", None)),
        **({"fixed": held} if held else {}),
        **({"preset": preset} if preset else {}),
    }


def tuned_configs(tuned: str | Path, presets: list[str], methods: list[str]):
    """What ``bench --tuned`` reads: ``(configs, sources, missing)``.

    ``configs[(preset, method)]`` is the tuned file's ``config`` (the overrides of that
    pair, :class:`~udora.experiments.run.overrides.Overrides`), ``sources[(preset, method)]`` its
    :func:`~udora.experiments.run.spec.tuned_source`, and ``missing[method]``
    the preset names without a tuned file (those run the default config). ``preset`` is
    as given (name or path). Raises ValueError when ``tuned`` is not a folder.
    """
    from udora.oracle.preset import load_preset

    if not Path(tuned).is_dir():
        raise UserError(f"--tuned: {tuned} is not a folder (write one with `udora tune`)")
    configs, sources, missing = {}, {}, {}
    for preset in presets:
        name = load_preset(preset).name
        for method in methods:
            found = load_tuned(tuned, name, method)
            if found is None:
                missing.setdefault(method, []).append(name)
                continue
            configs[(preset, method)] = _tuned_config(found, method)
            sweep_file = found.get("sweep_file")
            if found.get("protocol") is None and sweep_file and Path(sweep_file).is_file():
                found = {
                    **found,
                    "protocol": protocol_of(reading.yaml_value(sweep_file) or {}),
                }
            sources[(preset, method)] = tuned_source(found)
    return configs, sources, missing


def _tuned_config(found: dict[str, Any], method: str) -> Overrides:
    """The overrides of a tuned file, checked against the method's config, so a value the
    config refuses is an error naming the file, not only the field."""
    from udora import methods
    from udora.methods.base import ConfigError, make_config

    config = Overrides.from_flat(found.get("config"))
    try:
        make_config(methods.get_method_class(method).Config, dict(config.method))
    except ConfigError as err:
        raise UserError(f"{found['path']}: config: {err}") from None
    return config


def check_tuned_preset_fields(
    sources: dict[tuple[str, str], dict[str, Any]], preset_over: Mapping[str, Any]
) -> None:
    """``bench --tuned``: a config tuned on tasks with a preset field held (a ground-truth
    family) runs only on tasks with that field at the same value; raises UsageError
    naming the file, the field and both values."""
    from udora.experiments.run.checks import UsageError

    for (_, _), source in sorted(sources.items()):
        for key, value in sorted((source.get("preset_fields") or {}).items()):
            if preset_over.get(key) != value:
                have = (
                    f"have --set preset.{key}={preset_over[key]}"
                    if key in preset_over
                    else f"keep the preset's own {key}"
                )
                raise UsageError(
                    f"--tuned: {source['path']} was tuned with --set "
                    f"preset.{key}={value}; these runs {have} (give --set "
                    f"preset.{key}={value})"
                )
