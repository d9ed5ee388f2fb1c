"""Broken plugins are left out, with one warning line each naming the entry point and why.

The plugins are a distribution written into a temporary folder (tests/methods/plugin_fakes.py)
that ``importlib.metadata`` finds on ``sys.path``, as it finds one pip installed: one usable
plugin (``fake_mean``) and six broken ones (a missing module, a module whose import fails,
a missing class, a config field without a default, an unknown family, a bad quick budget).
"""

from __future__ import annotations

import sys
import warnings

import pytest
from plugin_fakes import BROKEN, ENTRY_POINTS, MODULES, table_rows, udora, write_distribution

from udora import methods
from udora.methods import registry

ORIGIN = "(distribution udora-fake-plugins 0.1)"
WHY = {  # what each broken plugin's warning says about why
    "fake_nomodule": "importing udora_no_such_module failed: ModuleNotFoundError: No module "
    "named 'udora_no_such_module'",
    "fake_raises": "importing udora_fake_raising failed: ModuleNotFoundError: No module named "
    "'udora_no_such_dependency'",
    "fake_noclass": "module udora_fake_plugins has no attribute 'NoSuchClass'",
    "fake_nodefault": "its config NoDefaultConfig has no default for field k",
    "fake_family": "family 'forests' is not one of",
    "fake_libraries": "libraries 'flax' is not a tuple of distribution names",
    "fake_quick": "its quick budget (QUICK) is refused: BadQuickConfig: unknown field(s) "
    "['n_epochs']",
}


def _left_out(name: str) -> str:
    return f"udora.methods plugin '{name} = {ENTRY_POINTS[name]}' {ORIGIN} is left out: "


@pytest.fixture(scope="module")
def plugin_dir(tmp_path_factory):
    return write_distribution(tmp_path_factory.mktemp("plugins"))


@pytest.fixture
def fake_plugins(plugin_dir, monkeypatch):
    """The fake distribution on ``sys.path``, the registry as if nothing had been read."""
    monkeypatch.syspath_prepend(str(plugin_dir))
    monkeypatch.setattr(registry, "_PLUGINS", None)
    monkeypatch.setattr(registry, "_BROKEN", {})
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    yield
    for module in MODULES:
        sys.modules.pop(module, None)


def _one_warning_each(lines: list[str]) -> None:
    """Exactly one line per broken plugin, naming its entry point and why."""
    assert len(lines) == len(BROKEN), lines
    for name in BROKEN:
        mine = [line for line in lines if _left_out(name) in line]
        assert len(mine) == 1 and WHY[name] in mine[0], (name, lines)


def test_udora_methods_lists_good_plugins_and_warns_once_per_broken_one(plugin_dir):
    listed = udora(plugin_dir, "methods")
    assert listed.returncode == 0, listed.stderr
    rows = table_rows(listed.stdout)
    assert "fake_mean" in rows and "plugin udora-fake-plugins 0.1" in rows["fake_mean"]
    assert "blr" in rows and not set(BROKEN) & set(rows)
    lines = listed.stderr.splitlines()
    assert all(line.startswith("warning: udora.methods plugin '") for line in lines), lines
    _one_warning_each(lines)


@pytest.mark.slow  # seconds each: in the slow set (CI runs it)
def test_udora_methods_name_shows_a_good_plugin_and_refuses_a_broken_one(plugin_dir):
    shown = udora(plugin_dir, "methods", "fake_mean")
    assert shown.returncode == 0, shown.stderr
    assert "MeanConfig" in shown.stdout and "│ floor " in shown.stdout
    _one_warning_each(shown.stderr.splitlines())
    for name in ("fake_noclass", "fake_nodefault"):
        refused = udora(plugin_dir, "methods", name)
        assert refused.returncode == 2 and "MeanConfig" not in refused.stdout
        [error] = refused.stderr.splitlines()  # the error alone, no warning repeating it
        assert error.startswith(f"error: method '{name}': {_left_out(name)[14:]}")
        assert WHY[name] in error


def test_method_infos_leave_broken_plugins_out(fake_plugins):
    with pytest.warns(registry.PluginWarning) as caught:
        infos = {info.name: info for info in registry.method_infos()}
    _one_warning_each([str(w.message) for w in caught])
    assert not set(BROKEN) & set(infos) and set(registry.BUILTIN_METHODS) <= set(infos)
    mean = infos["fake_mean"]
    assert (mean.origin, mean.family) == ("plugin udora-fake-plugins 0.1", "other")
    assert mean.summary.startswith("The training mean everywhere")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once only
        assert registry.get_method_class("fake_mean").name == "fake_mean"
        with pytest.raises(KeyError, match=r"'fake_nodefault = .*no default for field k"):
            registry.get_method_class("fake_nodefault")


def test_asking_for_a_broken_plugin_raises_why_without_a_warning(fake_plugins):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(KeyError) as err:
            registry.get_method_class("fake_quick")
    assert err.value.args[0] == f"method 'fake_quick': {_left_out('fake_quick')[14:]}" + (
        WHY["fake_quick"] + "; valid fields: floor"
    )


def test_plain_bench_grid_runs_everything_but_a_plugin_without_defaults(fake_plugins):
    """``udora bench`` with no --methods builds every listed method's default config."""
    from udora.experiments.grid.bench import make_grid, methods_for

    with pytest.warns(RuntimeWarning) as caught:  # PluginWarning is a RuntimeWarning
        names = methods.list_methods()
    assert "fake_nodefault" not in names and "fake_mean" in names
    _one_warning_each([str(w.message) for w in caught])
    regression = methods_for(["concrete"], names)  # what bench runs without --methods
    runs = make_grid(["concrete"], regression, [0])
    builtin = {
        n for n in registry.BUILTIN_METHODS if "regression" in methods.get_method_class(n).kinds
    }
    assert {run.method for run in runs} == set(regression) >= builtin
    only_classification = {"blr_logistic", "catboost_ve", "gp_approx"}
    assert set(names) - set(regression) == only_classification
