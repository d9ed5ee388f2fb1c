"""The console script in this process (``udora``); the tiny preset is in tests/conftest.py."""

import sys
import tempfile

import pytest


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
