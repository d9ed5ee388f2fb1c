"""Paper-constrained kernels (oracle/fit_paper.py): the ``kernel_paper`` block of a preset,
its ``kernel=paper`` selector, and the written fits (docs/presets.md)."""

import shutil

import numpy as np
import pytest
from typer.testing import CliRunner

from udora.oracle.fit_paper import paper_mll_and_grad, paper_refit_from_written
from udora.oracle.preset import PresetError, list_presets, load_preset

SHIPPED = ("protein", "seoul_bike", "white_wine")  # the presets whose free fit misses x1.5


def test_the_three_presets_ship_a_kernel_paper_and_no_other_does():
    regression = list_presets(kind="regression")
    assert [n for n in regression if load_preset(n).kernel_paper is not None] == list(SHIPPED)


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_kernel_paper_keeps_the_papers_values_and_range(name):
    p = load_preset(name)
    assert p.fit_paper["variant"] == "paper"
    assert (p.fit_paper["subset"], p.fit_paper["seed"]) == (p.fit["subset"], p.fit["seed"])
    assert p.fit_paper["noise_variance"] >= 1e-4  # the noise floor
    for comp, ref in zip(p.kernel_paper, p.paper["kernel"], strict=True):
        assert comp["type"] == ref["type"]
        assert comp["variance"] == ref["variance"], name  # pinned: written exactly
        for key in ("period", "alpha", "power"):
            if key in ref:
                assert comp[key] == ref[key], (name, key)
        if "lengthscale" in comp:
            lo, hi = ref["ls"]
            ls = np.asarray(comp["lengthscale"])
            assert ls.shape == (p.d,) and np.all((ls >= lo) & (ls <= hi)), (name, ls)
    mean = p.mean_paper or p.mean
    assert mean.value == p.paper["mean"]


def test_kernel_paper_selects_kernel_mean_and_record():
    base = load_preset("seoul_bike")
    v = base.with_overrides({"kernel": "paper"})
    assert v.kernel == base.kernel_paper and v.kernel != base.kernel
    assert v.mean == base.mean_paper and v.mean.value == pytest.approx(0.12)
    assert v.fit == base.fit_paper and v.fit["variant"] == "paper"
    assert v.kernel_paper is None and v.mean_paper is None and v.fit_paper is None
    assert isinstance(v.kernel, tuple) and all(isinstance(c, dict) for c in v.kernel)
    assert base.with_overrides({"kernel": "fitted"}) == base
    # the selector is applied before the other overrides
    both = base.with_overrides({"lengthscale_multiplier": 2.0, "kernel": "paper"})
    np.testing.assert_allclose(
        both.kernel[0]["lengthscale"], 2 * np.asarray(base.kernel_paper[0]["lengthscale"])
    )
    # a zero-mean preset keeps its mean
    protein = load_preset("protein")
    assert protein.mean_paper is None
    assert protein.with_overrides({"kernel": "paper"}).mean == protein.mean


def test_kernel_paper_changes_the_run_hash(shared_data):
    from udora.experiments.run.spec import RunSpec, resolve

    free = resolve(RunSpec("white_wine", "blr", 0, {}), shared_data)
    same = resolve(RunSpec("white_wine", "blr", 0, {"preset.kernel": "fitted"}), shared_data)
    paper = resolve(RunSpec("white_wine", "blr", 0, {"preset.kernel": "paper"}), shared_data)
    assert same.identity["task"] == free.identity["task"]
    assert paper.config_hash != free.config_hash
    assert paper.identity["task"]["kernel"] == [
        {**c} for c in load_preset("white_wine").model_dump(mode="json")["kernel_paper"]
    ]


@pytest.mark.parametrize("bad", ["papers", "free", 1, None, [{"type": "rbf", "variance": 1.0}]])
def test_a_bad_kernel_selector_is_one_clear_error(bad):
    with pytest.raises(PresetError, match=r"'fitted' or 'paper'") as err:
        load_preset("protein").with_overrides({"kernel": bad}, origin="--set preset")
    assert len(str(err.value).splitlines()) == 1 and "--set preset" in str(err.value)


def test_paper_without_a_kernel_paper_block_is_one_clear_error():
    with pytest.raises(PresetError, match=r"no kernel_paper block.*--paper --write") as err:
        load_preset("concrete").with_overrides({"kernel": "paper"})
    assert len(str(err.value).splitlines()) == 1


def test_kernel_paper_is_validated_like_kernel(tmp_path):
    import yaml

    data = load_preset("protein").model_dump(mode="json", exclude_none=True)
    data["kernel_paper"] = [data["kernel_paper"][0]]  # a component missing
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(PresetError, match="kernel_paper must have the components of kernel"):
        load_preset(path)
    data = load_preset("concrete").model_dump(mode="json", exclude_none=True)
    data["fit_paper"] = {"variant": "paper"}
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(PresetError, match="need a kernel_paper block"):
        load_preset(path)


@pytest.mark.slow  # ~10 s; the default run keeps under 5 minutes
def test_cli_paper_fit_writes_a_selectable_block(tmp_path, shared_data):
    """--paper on 120 rows of a seoul_bike copy: pinned paper values, range, mean, record."""
    from udora.experiments.cli.main import app

    path = tmp_path / "seoul_small.yaml"
    shutil.copy(load_preset.__globals__["preset_dir"]() / "seoul_bike.yaml", path)
    result = CliRunner().invoke(
        app,
        [
            "presets",
            "fit",
            str(path),
            "--paper",
            "--subset",
            "120",
            "--write",
            "--data-dir",
            str(shared_data),
        ],
    )
    assert result.exit_code == 0, result.output
    p = load_preset(path)
    assert p.fit_paper["subset"] == 120 and p.fit_paper["seed"] == 0
    assert p.kernel == load_preset("seoul_bike").kernel  # the free fit is untouched
    per, lin = p.kernel_paper
    assert (per["variance"], per["period"], lin["variance"]) == (0.376, 1.0, 0.223)
    ls = np.asarray(per["lengthscale"])
    assert np.all((ls >= 0.036) & (ls <= 2.19))
    assert p.mean_paper.value == 0.12
    mll, grad = paper_mll_and_grad(p, shared_data)
    assert mll == pytest.approx(p.fit_paper["mll_per_point"], abs=1e-9)
    assert grad < 1e-4


def _check_local_optimum(name, shared_data):
    p = load_preset(name)
    mll, grad_norm = paper_mll_and_grad(p, shared_data)
    assert mll == pytest.approx(p.fit_paper["mll_per_point"], abs=1e-6), name
    assert grad_norm < 1e-4, (name, grad_norm)
    # L-BFGS-B restarted at the written values inside the same box gains nothing
    assert paper_refit_from_written(p, shared_data) <= mll + 1e-6, name


# One marginal-likelihood gradient at 2000 rows takes about 1 s on two CPU cores.
@pytest.mark.slow
@pytest.mark.parametrize("name", SHIPPED)
def test_written_kernel_paper_is_a_local_optimum_in_the_papers_box(shared_data, name):
    _check_local_optimum(name, shared_data)
