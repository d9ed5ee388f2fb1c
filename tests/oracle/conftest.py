"""Shared fixtures for the oracle tests: small synthetic presets."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from udora.oracle.preset import Preset, parse_preset

SYNTH_KERNEL = [{"type": "matern32", "variance": 1.0, "lengthscale": [0.8, 1.5, 1.2]}]


@pytest.fixture
def synthetic_preset(tmp_path):
    """A factory: ``make(rows=..., **preset_fields) -> (Preset, data_dir)``."""

    def make(rows: int = 300, d: int = 3, seed: int = 0, **fields) -> tuple[Preset, str]:
        rng = np.random.default_rng(seed)
        X = rng.normal(size=(rows, d)) * np.arange(1, d + 1) + 10.0
        y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=rows) * 5.0 + 3.0
        frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(d)]).assign(target=y)
        frame.to_csv(tmp_path / "synth.csv.gz", index=False)
        data = {
            "name": "synth",
            "suite": "test",
            "source": {"file": "synth.csv.gz"},
            "features": [f"x{j}" for j in range(d)],
            "pool_size": rows,
            "n_train": rows // 3,
            "kernel": SYNTH_KERNEL if d == 3 else [{"type": "rbf", "variance": 1.0}],
            "noise": {"std_min": 0.1, "std_max": 0.3},
            "shift": [0.2, 0.2, 0.2, 0.2, 0.2],
        }
        data.update(fields)
        return parse_preset(data, "synth.yaml"), str(tmp_path)

    return make
