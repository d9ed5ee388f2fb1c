"""W&B logging: offline without credentials, and never fatal.

An offline run's transaction log (``offline-run-*/run-*.wandb``) is written by W&B's
service process, which closes it some time after ``run.finish()`` returns (``finish``
only tells the service, without waiting); under load a test reading it at once could see
a part of it. :func:`_offline_runs` waits for the service itself (``wandb.teardown()``
returns when it has exited, every run's log closed) before reading.
"""

import json

import pytest

from udora.experiments.run.execute import run_one
from udora.experiments.run.wandb_log import log_run, wandb_mode


def _offline_runs(run_dir):
    """The offline runs W&B wrote under ``run_dir``, read after its service has exited."""
    import wandb

    wandb.teardown()  # waits for the service process: every run's log is complete on disk
    return list((run_dir / "wandb").glob("offline-run-*"))


@pytest.fixture(params=["prompt", "slow"])
def service(request, monkeypatch):
    """``slow``: the service hears of a finished run only at teardown, as a busy machine
    may delay it (``run.finish()`` tells it without waiting), so the run's log is not yet
    complete when ``finish`` returns."""
    if request.param == "slow":
        from wandb.sdk.lib.service.service_connection import ServiceConnection

        monkeypatch.setattr(ServiceConnection, "inform_finish", lambda self, run_id: None)
    return request.param


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
    runs = _offline_runs(res.path)
    assert len(runs) == 1 and any(runs[0].rglob("*.wandb"))


def test_logging_problems_never_fail(tmp_path, no_credentials):
    (tmp_path / "result.json").write_text(json.dumps({"preset": "x"}))  # incomplete record
    with pytest.warns(UserWarning, match="W&B logging .* skipped"):
        assert log_run(tmp_path) is False


def test_grid_logs_the_resolved_run(tiny_preset, tmp_path, no_credentials, service):
    import io
    import warnings

    from rich.console import Console

    from udora.experiments.grid.bench import make_grid, run_grid

    path, data = tiny_preset
    (run,) = make_grid([str(path)], ["blr"], [2], {"alpha": 3.0}, data_dir=data)
    out = tmp_path / "out"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_grid([run], out, data_dir=data, wandb=True, console=Console(file=io.StringIO()))
    assert not [w.message for w in caught if "W&B logging" in str(w.message)]
    (logged,) = _offline_runs(run.run_dir(out))
    stored = b"".join(f.read_bytes() for f in logged.rglob("*.wandb"))  # offline run record
    assert run.config_hash.encode() in stored and b"alpha=3.0" in stored
