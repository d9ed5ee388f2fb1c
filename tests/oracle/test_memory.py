"""The oracle's memory estimate (oracle/memory.py) against the matrices a task build
really factors, and the refusal of a task that does not fit, before anything is read."""

import os

import numpy as np
import pytest

from udora.errors import UserError
from udora.oracle import gp, memory
from udora.oracle import task as task_module
from udora.oracle.task import JOINT_LIMIT, build_task


@pytest.mark.parametrize("joint_limit", [1000, 100], ids=["joint on the pool", "joint at S"])
def test_the_estimate_is_four_of_the_largest_matrix_a_build_factors(
    synthetic_preset, monkeypatch, joint_limit
):
    """Every matrix build_task factors is recorded; the estimate is DENSE_COPIES times the
    largest (the pool's Gram when drawn jointly, else the training sample's A)."""
    preset, data = synthetic_preset(rows=150)  # pool 150, n_train 50
    factored = []
    real = gp.cholesky_with_jitter

    def recording(K):
        L, jitter = real(K)
        factored.append((np.asarray(K), L))
        return L, jitter

    monkeypatch.setattr(gp, "cholesky_with_jitter", recording)
    task = build_task(preset, 0, data_dir=data, joint_limit=joint_limit)
    K, L = max(factored, key=lambda pair: pair[0].nbytes)
    m = 150 if task.meta["joint_sampling"] else 50
    assert task.meta["joint_sampling"] == (joint_limit >= 150)
    assert K.shape == L.shape == (m, m) and K.dtype == L.dtype == np.float64
    estimate = memory.dense_gp_bytes(preset.pool_size, preset.n_train, joint_limit)
    assert estimate == memory.DENSE_COPIES * K.nbytes == 4 * L.nbytes


def _forbidden(*args, **kwargs):
    raise AssertionError("read or allocated before the memory check")


@pytest.mark.parametrize(
    ("joint_limit", "message"),
    [
        (
            JOINT_LIMIT,
            "preset 'synth': the oracle's dense GP matrices need about 720.0 kB (4 float64 "
            "matrices of 150 x 150: preset.pool_size = 150, drawn jointly up to 10000 points) "
            "but 50.0 kB of memory is available; lower preset.pool_size",
        ),
        (
            100,
            "preset 'synth': the oracle's dense GP matrices need about 80.0 kB (4 float64 "
            "matrices of 50 x 50: preset.n_train = 50, as preset.pool_size = 150 is above "
            "100) but 50.0 kB of memory is available; lower preset.n_train",
        ),
    ],
)
def test_a_task_that_does_not_fit_is_refused_before_anything_is_read(
    synthetic_preset, monkeypatch, joint_limit, message
):
    preset, data = synthetic_preset(rows=150)
    monkeypatch.setattr(memory, "available_memory", lambda: 50_000)
    monkeypatch.setattr(task_module, "load_table_with_source", _forbidden)
    monkeypatch.setattr(gp, "gram", _forbidden)
    with pytest.raises(UserError) as err:
        build_task(preset, 0, data_dir=data, joint_limit=joint_limit)
    assert str(err.value) == message


def test_a_task_that_just_fits_is_built(synthetic_preset, monkeypatch):
    preset, data = synthetic_preset(rows=150)
    need = memory.dense_gp_bytes(preset.pool_size, preset.n_train, JOINT_LIMIT)
    monkeypatch.setattr(memory, "available_memory", lambda: need)
    assert build_task(preset, 0, data_dir=data).X.shape == (150, 3)


def test_the_features_family_forms_no_dense_gp_matrix(synthetic_preset, monkeypatch):
    preset, data = synthetic_preset(rows=150, truth={"family": "features", "features": 16})
    monkeypatch.setattr(memory, "available_memory", lambda: 1)
    assert build_task(preset, 0, data_dir=data).X.shape == (150, 3)


def test_available_memory_is_at_most_the_physical_memory():
    physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    assert 0 < memory.available_memory() <= physical
