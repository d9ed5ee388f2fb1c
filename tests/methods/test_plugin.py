"""Methods as plugins: the docs' udora_knn package, installed, shows up in ``udora methods``.

Also keeps methods/registry.py's BUILTIN_METHODS table in sync with the ``@register``
decorators of the built-in modules.
"""

from __future__ import annotations

import ast
import importlib.metadata
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from udora.methods import registry
from udora.methods.base import aleatoric_on

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "docs" / "examples" / "udora_knn"
CLI = "from udora.experiments.cli.main import main; main()"


@pytest.fixture(scope="module")
def knn_installed(tmp_path_factory):
    """docs/examples/udora_knn installed by pip into a temporary folder (never into the
    shared environment, which other workers' tests read); the folder, which the
    subprocesses below get on ``PYTHONPATH``, as ``importlib.metadata`` finds it there
    as it finds a package installed into the environment."""
    target = tmp_path_factory.mktemp("knn-site")
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation"),
            *("--no-index", "-q", "--target", str(target), str(PACKAGE)),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path_factory.mktemp("knn-build"),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert list(target.glob("udora_knn-*.dist-info")), sorted(p.name for p in target.iterdir())
    return {**os.environ, "PYTHONPATH": str(target)}


def _udora(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", CLI, *args], capture_output=True, text=True, timeout=120, env=env
    )


@pytest.mark.slow  # seconds each: in the slow set (CI runs it)
def test_installed_plugin_is_listed_and_shown(knn_installed):
    listed = _udora(knn_installed, "methods")
    assert listed.returncode == 0, listed.stderr
    rows = {line.split("│")[1].strip(): line for line in listed.stdout.splitlines() if "│" in line}
    assert "knn" in rows and "plugin udora-knn" in rows["knn"] and "blr" in rows
    assert "k-nearest neighbours" in rows["knn"]  # the class docstring, read without import
    shown = _udora(knn_installed, "methods", "knn")
    assert shown.returncode == 0, shown.stderr
    assert "KNNConfig" in shown.stdout and "│ k " in shown.stdout and "int" in shown.stdout
    assert '"k": {"distribution": "int_uniform"' in shown.stdout
    assert "quick budget (--quick): {}" in shown.stdout and "task prior: no" in shown.stdout


@pytest.mark.slow  # seconds each: in the slow set (CI runs it)
def test_installed_plugin_meets_the_contract_from_the_shell(knn_installed, tmp_path):
    """``python -m udora.methods.contract knn``: the check a plugin's author runs."""
    checked = subprocess.run(
        [sys.executable, "-m", "udora.methods.contract", "knn"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=knn_installed,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout == "knn: meets the method contract (11 rules)\n"


def test_builtin_table_matches_the_register_decorators():
    found = {}
    for path in (ROOT / "methods").glob("*.py"):
        for node in ast.parse(path.read_text()).body:
            for deco in getattr(node, "decorator_list", []):
                if isinstance(deco, ast.Call) and getattr(deco.func, "id", "") == "register":
                    found[deco.args[0].value] = f"udora.methods.{path.stem}:{node.name}"
    assert found == registry.BUILTIN_METHODS


def test_families_and_prior_use_read_without_import_are_the_classes_own(monkeypatch):
    from udora.methods.base import FAMILIES

    _fake_entry_points(monkeypatch)  # the built-ins only
    infos = {i.name: i for i in registry.method_infos()}
    for name in registry.BUILTIN_METHODS:
        cls = registry.get_method_class(name)
        assert infos[name].family == cls.family, name
        assert infos[name].uses_task_prior is cls.uses_task_prior, name
        assert infos[name].kinds == tuple(cls.kinds), name
        assert infos[name].not_for == tuple(cls.not_for), name
        assert not set(dict(cls.not_for)) & set(cls.kinds), name
        assert set(cls.kinds) <= {"regression", "classification"} and cls.kinds, name
        assert infos[name].aleatoric == cls.aleatoric, name
        assert cls.family in FAMILIES and cls.family != "other", name
    assert infos["gp_oracle"].family == "GP reference"
    assert {n for n, i in infos.items() if i.uses_task_prior} == {"gp_oracle", "gp_approx"}


def test_the_constant_aleatoric_declarations_are_the_shipped_releases_empty_au():
    """In the shipped release (scored by the same scorer, 969 runs), the methods whose AU
    Spearman is NaN in every ok run are exactly those that declare a constant AU; every
    other method has it in every ok run."""
    import pandas as pd

    from udora.experiments.publish.artefact import SHIPPED, read_release, release_folder

    table = read_release(release_folder(SHIPPED))[0]
    ok = table[table["status"] == "ok"]
    empty = ok.groupby("method")["spearman_au"].apply(lambda s: s.isna().all())
    full = ok.groupby("method")["spearman_au"].apply(lambda s: s.notna().all())
    regression = {
        n for n in registry.BUILTIN_METHODS if "regression" in registry.get_method_class(n).kinds
    }
    assert (empty | full).all() and set(empty.index) == regression
    declared = {
        n
        for n in regression
        if aleatoric_on(registry.get_method_class(n).aleatoric, "regression") == "constant"
    }
    assert (
        declared
        == set(empty.index[empty])
        == {"blr", "catboost_kgb", "deup", "deup_unbiased", "dkl", "gp_linear"}
    )
    assert isinstance(table, pd.DataFrame)


def _fake_entry_points(monkeypatch, *specs: tuple[str, str]) -> None:
    eps = [importlib.metadata.EntryPoint(n, v, registry.ENTRY_POINT_GROUP) for n, v in specs]
    monkeypatch.setattr(registry.importlib.metadata, "entry_points", lambda group: eps)
    monkeypatch.setattr(registry, "_PLUGINS", None)
    monkeypatch.setattr(registry, "_BROKEN", {})


def test_broken_plugin_warns_and_builtins_still_work(monkeypatch):
    _fake_entry_points(monkeypatch, ("broken", "no_such_module_udora:X"))
    left_out = r"'broken = no_such_module_udora:X' is left out: importing no_such_module_udora"
    with pytest.warns(registry.PluginWarning, match=left_out):
        names = registry.list_methods()
    assert "broken" not in names and "blr" in names
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once only
        assert registry.get_method_class("blr").name == "blr"
        with pytest.raises(KeyError, match=r"method 'broken': plugin 'broken = .* is left out"):
            registry.get_method_class("broken")


def test_plugin_named_like_a_builtin_is_an_error_naming_both(monkeypatch):
    _fake_entry_points(monkeypatch, ("blr", "my_pkg.blr:MyBLR"))
    with pytest.raises(ValueError, match=r"'blr = my_pkg.blr:MyBLR'.*built-in udora.methods.blr"):
        registry.list_methods()


@pytest.mark.parametrize("value", ["not a path!!", "mod:", ":Cls", ""])
def test_a_malformed_entry_point_is_left_out_and_the_rest_works(monkeypatch, value):
    """A value that is not module:Class made EntryPoint.module raise inside the loader's
    own error handler, which took `udora methods` and `bench` down."""
    _fake_entry_points(monkeypatch, ("weird", value))
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    with pytest.warns(
        registry.PluginWarning, match=r"'weird = .*' is left out: its value .* is not"
    ):
        names = registry.list_methods()
    assert "weird" not in names and "blr" in names
