"""Names are names (src/udora/names.py): what becomes a path part is checked against one
rule, and nothing is written outside the folder a command was given, a symbolic link
planted inside it included."""

from __future__ import annotations

import importlib.metadata

import pytest
import yaml

from udora.errors import UserError
from udora.experiments.run.execute import run_one
from udora.experiments.tuning.tuned_files import tuned_path
from udora.methods import registry
from udora.names import check_name, inside
from udora.oracle.preset import PresetError, load_preset

BAD = ["", ".", "..", "../x", "a/b", "/abs", ".hidden", "-flag", "<!--<script>", "a b", "x" * 65]


@pytest.mark.parametrize("name", ["concrete", "nn_ensemble", "a.b-c_9", "x" * 64])
def test_a_name_passes(name):
    assert check_name(name, "preset name") == name


@pytest.mark.parametrize("name", [*BAD, None, 3])
def test_anything_else_is_one_clear_error(name):
    with pytest.raises(UserError, match=r"preset name .* is not a valid name: expected 1-64"):
        check_name(name, "preset name")


def test_a_path_through_a_planted_link_is_refused(tmp_path):
    out, elsewhere = tmp_path / "results", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (out / "tiny").symlink_to(elsewhere)
    assert inside(out, out / "other" / "x") == (out / "other" / "x").resolve()
    with pytest.raises(UserError, match="outside the folder"):
        inside(out, out / "tiny" / "blr")


@pytest.mark.parametrize("bad", ["../../x", "/tmp/x", "<!--<script>"])
def test_a_preset_name_from_set_or_a_file_is_checked(tiny_preset, tmp_path, bad):
    path, data = tiny_preset
    with pytest.raises(PresetError, match=r"field 'name'.*not a valid name"):
        run_one(path, "blr", 0, {"preset.name": bad}, tmp_path / "res", data_dir=data)
    spec = yaml.safe_load(path.read_text())
    other = tmp_path / "other.yaml"
    other.write_text(yaml.safe_dump({**spec, "name": bad}))
    with pytest.raises(PresetError, match=r"field 'name'.*not a valid name"):
        load_preset(other)
    assert not (tmp_path / "res").exists()


def test_a_run_is_not_written_through_a_link_planted_in_the_results_folder(tiny_preset, tmp_path):
    path, data = tiny_preset
    out, elsewhere = tmp_path / "res", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (out / "tiny").symlink_to(elsewhere)  # the preset's folder
    with pytest.raises(UserError, match="outside the folder"):
        run_one(path, "blr", 0, None, out, data_dir=data)
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("bad", ["..", "../x", "a/b"])
def test_tuned_files_and_methods_take_names_only(bad, tmp_path):
    with pytest.raises(UserError, match="not a valid name"):
        tuned_path(tmp_path, "concrete", bad)
    with pytest.raises(UserError, match="not a valid name"):
        tuned_path(tmp_path, bad, "blr")
    with pytest.raises(UserError, match=r"method name .* is not a valid name"):
        registry.register(bad)


def test_a_plugin_whose_name_is_a_path_is_left_out(monkeypatch):
    target = "udora.methods.blr:BayesianLinearRegression"
    eps = [importlib.metadata.EntryPoint("../evil", target, registry.ENTRY_POINT_GROUP)]
    monkeypatch.setattr(registry.importlib.metadata, "entry_points", lambda group: eps)
    monkeypatch.setattr(registry, "_PLUGINS", None)
    monkeypatch.setattr(registry, "_BROKEN", {})
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    with pytest.warns(registry.PluginWarning, match="method name '../evil' is not a valid name"):
        names = registry.list_methods()
    assert "../evil" not in names and "blr" in names
