"""``udora presets fit``: fit a preset's kernel, show it beside the paper's, write the YAML."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from udora.oracle.atomic import write_text
from udora.oracle.fit import fit_preset
from udora.oracle.preset import load_preset, parse_preset, preset_path, preset_to_yaml
from udora.oracle.task import noise_for_median_std

HEADER = (
    "Kernel hyperparameters fitted by `udora presets fit` (exact marginal likelihood on the\n"
    "standardised real data; see the fit block). Noise: std_max = 3 std_min, with std_min set\n"
    "so that the pool median of sigma_eps equals the paper's aleatoric std (original units)."
)


def fit_and_write(
    name: str,
    *,
    subset: int = 2000,
    seed: int = 0,
    write: bool = False,
    data_dir: str | Path | None = None,
    console: Console | None = None,
):
    """Fit ``name``, print ours vs the current and paper values, optionally write the YAML.

    Returns the refitted (validated) preset.
    """
    console = console or Console()
    preset = load_preset(name)
    result = fit_preset(preset, subset=subset, seed=seed, data_dir=data_dir, progress=console.print)
    data = preset.model_dump(mode="json", exclude_none=True)
    data["kernel"] = result.kernel
    if preset.mean.type == "constant":
        data["mean"] = {"type": "constant", "value": result.mean_value}
    if "aleatoric_std" in preset.paper:
        data["noise"] = noise_for_median_std(preset, preset.paper["aleatoric_std"], data_dir)
    data["fit"] = result.record()
    fitted = parse_preset(data, f"fit of {name}")

    table = Table("component", "field", "before", "fitted", "paper")
    paper = preset.paper.get("kernel", [])
    for i, (old, new) in enumerate(zip(preset.kernel, fitted.kernel, strict=True)):
        ref = paper[i] if i < len(paper) else {}
        for key in ("variance", "lengthscale", "period"):
            if key in new:
                table.add_row(
                    f"{i} {new['type']}",
                    key,
                    _fmt(old.get(key)),
                    _fmt(new[key]),
                    _fmt(ref.get("ls" if key == "lengthscale" else key)),
                )
    table.add_row(
        "mean",
        "value",
        _fmt(preset.mean.value),
        _fmt(fitted.mean.value),
        _fmt(preset.paper.get("mean")),
    )
    table.add_row("noise", "variance (fit)", "-", _fmt(result.noise_variance), "-")
    console.print(table)
    console.print(
        f"log marginal likelihood per point {result.mll_per_point:.4f} on {result.rows} rows "
        f"in {result.seconds:.1f} s; screened restarts: "
        + ", ".join(f"{v:.4f}" for v in result.restarts)
    )
    if write:
        path = preset_path(name)
        write_text(path, preset_to_yaml(fitted, HEADER))
        console.print(f"wrote {path}")
    return fitted


PAPER_HEADER_LINE = (
    "kernel_paper: the paper's variances, mean and period with the lengthscales fitted inside\n"
    "the paper's range (`udora presets fit NAME --paper --write`, oracle/fit_paper.py); "
    "selected\nper run by `--set preset.kernel=paper`."
)


def fit_paper_and_write(
    name: str,
    *,
    subset: int | None = None,
    seed: int | None = None,
    write: bool = False,
    data_dir: str | Path | None = None,
    console: Console | None = None,
):
    """Fit ``name``'s paper-constrained kernel (oracle/fit_paper.py), print it beside the
    free fit and the paper's values, optionally write the ``kernel_paper`` block.

    ``subset`` and ``seed`` default to the free fit's. Returns the preset with the block.
    """
    from udora.oracle.fit_paper import fit_paper_kernel, paper_record

    console = console or Console()
    preset = load_preset(name)
    result, mean = fit_paper_kernel(
        preset, subset=subset, seed=seed, data_dir=data_dir, progress=console.print
    )
    data = preset.model_dump(mode="json", exclude_none=True)
    data["kernel_paper"] = result.kernel
    data.pop("mean_paper", None)
    if mean != preset.mean:
        data["mean_paper"] = mean.model_dump(mode="json")
    data["fit_paper"] = paper_record(result)
    fitted = parse_preset(data, f"paper-constrained fit of {name}")

    table = Table("component", "field", "free fit", "paper-constrained", "paper")
    paper = preset.paper.get("kernel", [])
    for i, (free, new) in enumerate(zip(preset.kernel, fitted.kernel_paper, strict=True)):
        ref = paper[i] if i < len(paper) else {}
        for key in ("variance", "lengthscale", "period"):
            if key in new:
                table.add_row(
                    f"{i} {new['type']}",
                    key,
                    _fmt(free.get(key)),
                    _fmt(new[key]),
                    _fmt(ref.get("ls" if key == "lengthscale" else key)),
                )
    table.add_row(
        "mean", "value", _fmt(preset.mean.value), _fmt(mean.value), _fmt(preset.paper.get("mean"))
    )
    free_rec = preset.fit or {}
    table.add_row(
        "noise",
        "variance (fit)",
        _fmt(free_rec.get("noise_variance")),
        _fmt(result.noise_variance),
        "-",
    )
    table.add_row(
        "mll/pt", "", _fmt(free_rec.get("mll_per_point")), _fmt(result.mll_per_point), "-"
    )
    console.print(table)
    console.print(
        f"paper-constrained log marginal likelihood per point {result.mll_per_point:.4f} on "
        f"{result.rows} rows (seed {result.seed}) in {result.seconds:.1f} s; screened starts: "
        + ", ".join(f"{v:.4f}" for v in result.restarts)
    )
    if write:
        path = preset_path(name)
        text = path.read_text()
        header = "".join(line[2:] + "\n" for line in text.splitlines() if line.startswith("# "))
        if PAPER_HEADER_LINE.splitlines()[0] not in header:
            header += PAPER_HEADER_LINE
        write_text(path, preset_to_yaml(fitted, header.rstrip("\n")))
        console.print(f"wrote {path}")
    return fitted


def _fmt(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, list):
        return f"[{min(value):.3g} .. {max(value):.3g}]" if len(value) > 1 else f"{value[0]:.3g}"
    return f"{value:.4g}"
