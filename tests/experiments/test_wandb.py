"""W&B logging: offline without credentials, and never fatal."""

import json

import pytest

from udora.experiments.run.execute import run_one
from udora.experiments.run.wandb_log import log_run, wandb_mode


@pytest.fixture
def no_credentials(monkeypatch, tmp_path):
    for var in ("WANDB_MODE", "WANDB_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no ~/.netrc
    monkeypatch.setenv("WANDB_DIR", str(tmp_path / "wandb"))
    monkeypatch.setenv("WANDB_SILENT", "true")


def test_offline_run_is_written_without_network(tiny_preset, tmp_path, no_credentials):
    path, data = tiny_preset
    res = run_one(path, "blr", 0, {}, tmp_path / "out", data_dir=data)
    assert wandb_mode() == "offline"
    assert log_run(res.path) is True
    runs = list((res.path / "wandb").glob("offline-run-*"))
    assert len(runs) == 1 and any(runs[0].rglob("*.wandb"))


def test_logging_problems_never_fail(tmp_path, no_credentials):
    (tmp_path / "result.json").write_text(json.dumps({"preset": "x"}))  # incomplete record
    with pytest.warns(UserWarning, match="W&B logging .* skipped"):
        assert log_run(tmp_path) is False


def test_grid_logs_the_resolved_run(tiny_preset, tmp_path, no_credentials):
    import io

    from rich.console import Console

    from udora.experiments.grid.bench import make_grid, run_grid

    path, data = tiny_preset
    (run,) = make_grid([str(path)], ["blr"], [2], {"alpha": 3.0}, data_dir=data)
    out = tmp_path / "out"
    run_grid([run], out, data_dir=data, wandb=True, console=Console(file=io.StringIO()))
    (logged,) = list((run.run_dir(out) / "wandb").glob("offline-run-*"))
    stored = b"".join(f.read_bytes() for f in logged.rglob("*.wandb"))  # offline run record
    assert run.config_hash.encode() in stored and b"alpha=3.0" in stored
