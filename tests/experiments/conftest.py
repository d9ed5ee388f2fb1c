"""A tiny preset on disk (YAML + data file) for end-to-end runner tests; the console
script in this process (``udora``)."""

import sys
import tempfile

import numpy as np
import pandas as pd
import pytest
import yaml


@pytest.fixture
def tiny_preset(tmp_path):
    """(path to a tiny preset YAML, its data folder): 120-point pool, 40 training points."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 2))
    frame = pd.DataFrame(X, columns=["a", "b"]).assign(target=np.sin(X[:, 0]) + X[:, 1])
    data = tmp_path / "data"
    data.mkdir()
    frame.to_csv(data / "tiny.csv.gz", index=False)
    preset = {
        "name": "tiny",
        "suite": "test",
        "source": {"file": "tiny.csv.gz"},
        "features": ["a", "b"],
        "pool_size": 120,
        "n_train": 40,
        "kernel": [{"type": "rbf", "variance": 1.0, "lengthscale": [1.0, 1.5]}],
        "noise": {"std_min": 0.1, "std_max": 0.3},
        "shift": [0.4, 0.3, 0.2, 0.1, 0.0],
    }
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(preset))
    return path, data


@pytest.fixture
def udora(monkeypatch, capsys, tmp_path):
    """``udora(*args)`` -> (exit code, stdout, stderr) of the console script, in this
    process; a bug's traceback file goes to this test's own temporary folder."""
    from udora.experiments.cli.main import main

    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))

    def call(*args) -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "argv", ["udora", *map(str, args)])
        with pytest.raises(SystemExit) as exit_:
            main()
        return (exit_.value.code, *capsys.readouterr())

    return call
