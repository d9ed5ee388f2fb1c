"""A classification task end to end on a tiny preset: determinism, the stored arrays, the
labels' distribution, refusal by the diagnostics, and the preset's and table's errors."""

import gzip

import numpy as np
import pandas as pd
import pytest
from tiny_presets import tiny_classification_preset as tiny_cls

from udora.errors import UserError
from udora.oracle import reading
from udora.oracle.classification.preset import ClassificationPreset
from udora.oracle.classification.targets import SHAPES
from udora.oracle.classification.task import ClassificationTask, build_sample, build_task
from udora.oracle.data import load_table_with_source
from udora.oracle.files import file_checksum
from udora.oracle.preset import PresetError, load_preset, parse_preset
from udora.oracle.store import load_oracle, save_task, summary


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    preset, data = tiny_cls(tmp_path_factory.mktemp("cls"))
    return preset, data, build_task(preset, 0, data_dir=data)


@pytest.mark.slow  # moved for the default set's 4-minute budget
def test_the_same_seed_gives_the_same_draws_and_another_seed_others(built):
    preset, data, task = built
    again = build_task(preset, 0, data_dir=data)
    for name, array in task.to_arrays().items():
        np.testing.assert_array_equal(array, again.to_arrays()[name], err_msg=name)
    assert task.arrays_sha256() == again.arrays_sha256()
    other = build_task(preset, 1, data_dir=data)
    assert not np.array_equal(other.moments.prob, task.moments.prob)


@pytest.mark.slow  # the built task is the slow part
def test_the_tuning_sample_is_the_tasks_sample_draw_for_draw(built):
    """``build_sample`` (what tuning fits on) gives the built task's pool, training rows,
    labels and prior without sampling a posterior."""
    preset, data, task = built
    sample = build_sample(preset, 0, data_dir=data)
    for name in ("X", "train_idx", "y_train", "X_train"):
        np.testing.assert_array_equal(getattr(sample, name), getattr(task, name), err_msg=name)
    assert sample.knowledge() == task.knowledge()
    mine, theirs = sample.prior, task.prior
    assert (mine.kernel, mine.mean, mine.latent_scale) == (
        theirs.kernel,
        theirs.mean,
        theirs.latent_scale,
    )
    np.testing.assert_array_equal(mine.standardiser.x_mean, theirs.standardiser.x_mean)
    np.testing.assert_array_equal(mine.standardiser.x_sd, theirs.standardiser.x_sd)
    assert not hasattr(sample, "moments") and not hasattr(sample, "f")
    assert not np.array_equal(build_sample(preset, 1, data_dir=data).y_train, task.y_train)


@pytest.mark.slow  # moved for the default set's 4-minute budget
def test_arrays_round_trip_through_the_oracle_folder(built, tmp_path):
    preset, _, task = built
    folder = save_task(task, tmp_path / "out")
    arrays, info = load_oracle(folder)
    sizes = reading.shaped(folder / "oracle.npz", arrays, SHAPES)
    assert (sizes["N"], sizes["C"], sizes["L"], sizes["B"]) == (90, 3, 3, 40)
    back = ClassificationTask.from_arrays(preset, 0, arrays, info)
    np.testing.assert_array_equal(back.moments.entropy, task.moments.entropy)
    assert back.arrays_sha256() == task.arrays_sha256()
    shown = summary(arrays, info)
    assert shown["kind"] == "classification" and shown["classes"] == 3
    assert shown["min_ess_bulk"] >= 1000 and shown["max_rhat"] < 1.02
    # the stored standard errors are the batch means' spread
    m = task.moments
    se = arrays["entropy_se"]
    np.testing.assert_allclose(se, m.entropy_batches.std(0, ddof=1) / np.sqrt(40))
    np.testing.assert_allclose(arrays["prob"].sum(axis=1), 1.0, rtol=1e-12)


@pytest.mark.slow  # moved for the default set's 4-minute budget
def test_labels_follow_the_realised_probabilities(built):
    """Pool labels are one draw per point from p_f*: each class's count is within 4
    standard deviations of its expected count."""
    _, _, task = built
    p = task.true_prob
    for c in range(3):
        count = np.sum(task.y == c)
        expected, sd = p[:, c].sum(), np.sqrt(np.sum(p[:, c] * (1 - p[:, c])))
        assert abs(count - expected) < 4 * sd, (c, count, expected)
    assert task.meta["diagnostics"]["failures"] == []
    assert -1 <= task.meta["au_ceiling_spearman"] <= 1


@pytest.mark.slow  # ~10-25 s
def test_a_sampler_that_cannot_converge_refuses_the_task(tmp_path):
    preset, data = tiny_cls(
        tmp_path,
        classes=2,
        sampler={"warmup": 50, "draws": 100, "extend": 100, "max_draws": 100, "batches": 10},
    )
    with pytest.raises(UserError, match=r"preset 'tinycls' seed 3: .*after 100 draws.*ess"):
        build_task(preset, 3, data_dir=data)


def test_preset_errors_name_the_field(tmp_path):
    preset, _ = tiny_cls(tmp_path)
    data = preset.model_dump()
    with pytest.raises(PresetError, match="mean has 1 constants; a task with 3 classes"):
        parse_preset({**data, "mean": [0.0]}, "p.yaml")
    with pytest.raises(PresetError, match=r"prepare\.slog names columns that are not features"):
        parse_preset({**data, "prepare": {"slog": ["nope"]}}, "p.yaml")
    with pytest.raises(PresetError, match="max_draws"):
        parse_preset({**data, "sampler": {"draws": 1000, "max_draws": 500}}, "p.yaml")
    with pytest.raises(PresetError, match=r"unknown preset field 'noise\.std_min'"):
        preset.with_overrides({"noise.std_min": 0.1})
    scaled = preset.with_overrides({"latent_scale": 2.0, "sampler.draws": 2000})
    assert isinstance(scaled, ClassificationPreset) and scaled.latent_scale == 2.0


def test_a_label_that_is_not_a_class_code_is_named_with_its_row(tmp_path):
    preset, data = tiny_cls(tmp_path)
    frame = pd.read_csv(data / "cls.csv.gz")
    frame.loc[7, "target"] = 3  # the preset has classes 0..2
    frame.to_csv(data / "cls.csv.gz", index=False)
    with pytest.raises(UserError, match=r"cls.csv.gz: column 'target' row 7 holds 3; .*0\.\.2"):
        build_task(preset, 0, data_dir=data)
    dropped = preset.with_overrides({"prepare.drop_rows": [95]})
    frame.loc[7, "target"] = 1
    frame.to_csv(data / "cls.csv.gz", index=False)
    with pytest.raises(UserError, match=r"drops row 95.*has 90 rows"):
        build_task(dropped, 0, data_dir=data)


def test_the_shipped_tables_are_the_data_folders_files(shared_data, monkeypatch):
    """banknote and vehicle read offline without a data folder, and are byte for byte the
    data folder's files (so their tasks are the same tasks)."""
    monkeypatch.delenv("UDORA_DATA_DIR", raising=False)
    for name in ("banknote", "vehicle"):
        preset = load_preset(name)
        X, _, source = load_table_with_source(preset, None, allow_download=False)
        original = shared_data / "classification" / f"{name}.csv.gz"
        assert source.sha256 == file_checksum(original)
        with gzip.open(original) as handle:
            assert X.shape[0] == len(pd.read_csv(handle))


def test_a_benchmark_preset_without_a_fitted_kernel_is_refused(tmp_path):
    preset, data = tiny_cls(tmp_path)
    unfitted = preset.with_overrides({"suite": "cls-dev"})
    with pytest.raises(UserError, match=r"no fitted kernel yet.*udora presets fit tinycls"):
        build_task(unfitted, 0, data_dir=data)
