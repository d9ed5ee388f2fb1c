"""Two tiny presets on one 120-row table, for tests that need a grid over presets."""

import numpy as np
import pandas as pd
import yaml


def two_tiny_presets(root, std_max=0.3):
    """Write ``root/data/tiny.csv.gz`` and presets ``tinya``/``tinyb`` (RBF lengthscales
    [1, 1.5] and [0.5, 2], 40 training points); returns (their YAML paths, the data folder)."""
    data = root / "data"
    data.mkdir()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 2))
    frame = pd.DataFrame(X, columns=["a", "b"]).assign(target=np.sin(X[:, 0]) + X[:, 1])
    frame.to_csv(data / "tiny.csv.gz", index=False)
    paths = []
    for name, ell in (("tinya", [1.0, 1.5]), ("tinyb", [0.5, 2.0])):
        preset = {
            "name": name,
            "suite": "test",
            "source": {"file": "tiny.csv.gz"},
            "features": ["a", "b"],
            "pool_size": 120,
            "n_train": 40,
            "kernel": [{"type": "rbf", "variance": 1.0, "lengthscale": ell}],
            "noise": {"std_min": 0.1, "std_max": std_max},
            "shift": [0.4, 0.3, 0.2, 0.1, 0.0],
        }
        path = root / f"{name}.yaml"
        path.write_text(yaml.safe_dump(preset))
        paths.append(str(path))
    return paths, data


def one_tiny_preset(root, rows=120, n_train=40, seed=0):
    """Write ``root/data/tiny.csv.gz`` (``rows`` points, target sin(a) + b) and preset
    ``tiny`` on all of it with ``n_train`` training points; returns (its YAML path, the
    data folder). For module-scoped fixtures, which cannot use conftest's ``tiny_preset``."""
    data = root / "data"
    data.mkdir()
    X = np.random.default_rng(seed).normal(size=(rows, 2))
    frame = pd.DataFrame(X, columns=["a", "b"]).assign(target=np.sin(X[:, 0]) + X[:, 1])
    frame.to_csv(data / "tiny.csv.gz", index=False)
    preset = {
        "name": "tiny",
        "suite": "test",
        "source": {"file": "tiny.csv.gz"},
        "features": ["a", "b"],
        "pool_size": rows,
        "n_train": n_train,
        "kernel": [{"type": "rbf", "variance": 1.0, "lengthscale": [1.0, 1.5]}],
        "noise": {"std_min": 0.1, "std_max": 0.3},
        "shift": [0.4, 0.3, 0.2, 0.1, 0.0],
    }
    path = root / "tiny.yaml"
    path.write_text(yaml.safe_dump(preset))
    return path, data


def tiny_classification_preset(root, classes=3, rows=90, **fields):
    """Write ``root/data/cls.csv.gz`` (``rows`` rows, features a and b, labels cycling
    through ``classes`` codes) and classification preset ``tinycls`` on all of it (30
    training draws, a fast sampler); returns (the loaded preset, the data folder)."""
    data = root / "data"
    data.mkdir(exist_ok=True)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(rows, 2))
    frame = pd.DataFrame(X, columns=["a", "b"]).assign(target=np.arange(rows) % classes)
    frame.to_csv(data / "cls.csv.gz", index=False)
    preset = {
        "kind": "classification",
        "name": "tinycls",
        "suite": "test",
        "source": {"file": "cls.csv.gz"},
        "features": ["a", "b"],
        "classes": [f"c{k}" for k in range(classes)],
        "pool_size": rows,
        "n_train": 30,
        "kernel": [{"type": "rbf", "variance": 1.5, "lengthscale": [1.0, 1.0]}],
        "mean": [0.0] * (1 if classes == 2 else classes),
        "shift": [0.4, 0.3, 0.2, 0.1, 0.0],
        "sampler": {"warmup": 200, "draws": 1000, "max_draws": 2000},
        **fields,
    }
    path = root / "tinycls.yaml"
    path.write_text(yaml.safe_dump(preset))
    from udora.oracle.preset import load_preset

    return load_preset(path), data


def matern32_preset(folder, rows, n_train, truth=None):
    """Write ``folder/p.csv.gz`` (a synthetic two-feature table of ``rows`` points) and
    ``folder/p.yaml``, a preset with all of them in the pool, ``n_train`` training draws
    and a Matern-3/2 kernel with lengthscales [0.7, 1.1] (:func:`dense_posterior_covariance`
    recomputes its posterior with numpy); returns the YAML's path."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(rows, 2)) * [1.0, 3.0] + 5.0
    y = np.sin(X[:, 0]) + 0.05 * X[:, 1] ** 2 + 0.2 * rng.normal(size=rows)
    pd.DataFrame(X, columns=["a", "b"]).assign(target=y).to_csv(folder / "p.csv.gz", index=False)
    config = {
        "name": "p",
        "suite": "test",
        "source": {"file": "p.csv.gz"},
        "features": ["a", "b"],
        "pool_size": rows,
        "n_train": n_train,
        "kernel": [{"type": "matern32", "variance": 1.0, "lengthscale": [0.7, 1.1]}],
        "noise": {"std_min": 0.1, "std_max": 0.3},
        "shift": [0.2, 0.2, 0.2, 0.2, 0.2],
        **({"truth": truth} if truth else {}),
    }
    path = folder / "p.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def matern32_task(folder, rows, n_train, seed, truth=None):
    """The task of :func:`matern32_preset` at ``seed``."""
    from udora.oracle.preset import load_preset
    from udora.oracle.task import build_task

    path = matern32_preset(folder, rows, n_train, truth)
    return build_task(load_preset(path), seed, data_dir=folder)


def dense_posterior_covariance(task, extra=()):
    """The posterior covariance over the pool of a :func:`matern32_task`, from the
    textbook kernel and a dense solve (original units), (N, N); ``extra`` pool indices
    are conditioned on as further noisy observations."""
    std = task.prior.standardiser
    Z, S = std.x(task.X), np.concatenate([task.train_idx, np.asarray(extra, dtype=np.int64)])
    ls = np.array([0.7, 1.1])
    r = np.sqrt(np.sum(((Z[:, None, :] - Z[None, :, :]) / ls) ** 2, axis=-1))
    K = (1 + np.sqrt(3) * r) * np.exp(-np.sqrt(3) * r)
    A = K[np.ix_(S, S)] + np.diag(task.noise_var[S] / std.y_sd**2)
    return std.y_sd**2 * (K - K[:, S] @ np.linalg.solve(A, K[S, :]))
