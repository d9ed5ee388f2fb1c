"""The classification kind from the command line: presets listed with their kind and
suite, ``oracle build``/``show`` of a classification task, ``presets fit`` of a
classification preset (kernel, means, fit and realism blocks written to its YAML)."""

import pytest
import yaml
from tiny_presets import tiny_classification_preset

from udora.oracle.preset import load_preset


def test_presets_lists_the_classification_suites(udora):
    code, out, _ = udora("presets", "--suite", "cls-dev")
    assert code == 0
    for name in ("spambase", "phoneme", "banknote", "eeg_eye_state", "satimage", "segment"):
        assert name in out
    assert "classification" in out and "regression" not in out and "letter" not in out
    code, _, err = udora("presets", "show", "spambase")
    assert code == 2 and "'spambase' is a classification preset" in err


@pytest.mark.slow  # ~10-25 s
def test_oracle_build_and_show_a_classification_task(udora, tmp_path):
    _, data = tiny_classification_preset(tmp_path, classes=2)
    out = tmp_path / "oracle"
    code, text, err = udora(
        "oracle",
        "build",
        "--preset",
        tmp_path / "tinycls.yaml",
        "--seed",
        "1",
        "--out",
        out,
        "--data-dir",
        data,
        "--set",
        "preset.latent_scale=1.5",
    )
    assert code == 0, err
    assert "classification" in text and "min_ess_bulk" in text
    info = yaml.safe_load((out / "oracle.json").read_text())  # JSON is YAML
    assert info["kind"] == "classification" and info["latent_scale"] == 1.5
    assert info["diagnostics"]["failures"] == []
    code, shown, _ = udora("oracle", "show", out)
    assert code == 0 and "median_mutual_information" in shown
    code, _, err = udora(
        "oracle",
        "build",
        "--preset",
        tmp_path / "tinycls.yaml",
        "--out",
        tmp_path / "o2",
        "--data-dir",
        data,
        "--set",
        "preset.noise.std_min=0.1",
    )
    assert code == 2 and "unknown preset field 'noise.std_min'" in err


@pytest.mark.slow  # four families fitted by EP: ~40 s
def test_presets_fit_writes_the_kernel_and_the_realism_check(udora, tmp_path):
    preset, data = tiny_classification_preset(tmp_path, classes=2, rows=120)
    path = tmp_path / "tinycls.yaml"
    code, out, err = udora("presets", "fit", path, "--data-dir", data, "--write")
    assert code == 0, err
    assert "(chosen)" in out and "logistic_regression" in out
    fitted = load_preset(path)
    assert fitted.fit["family"] in ("rbf", "matern32", "matern52", "rational_quadratic")
    assert set(fitted.fit["selection"]) == {"rbf", "matern32", "matern52", "rational_quadratic"}
    assert [c["type"] for c in fitted.kernel][-1] == "linear"
    assert fitted.realism["held_out_rows"] == fitted.fit["rows"]["held_out"] == 24
    for model in ("gp", "logistic_regression", "boosted_trees"):
        assert 0 <= fitted.realism[model]["accuracy"] <= 1
    assert fitted.features == preset.features and fitted.classes == preset.classes
