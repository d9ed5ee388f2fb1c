"""How a command ends on an error (docs/running.md, "Exit codes"): a user error is one
line and exit 2; anything else is a bug, one line with udora's version naming a file that
holds the traceback, and exit 3; a file-system fault keeps its one line naming the path.

Each test runs the console script's ``main()`` in this process, so a library function a
command calls can be replaced by one that raises."""

import errno
import sys
import tempfile

import pytest

import udora
from udora.experiments.cli.errors import BUG_EXIT
from udora.experiments.cli.main import main


@pytest.fixture
def bug_folder(tmp_path, monkeypatch):
    """The temporary folder the traceback files go to, empty and this test's own."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def _udora(monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``udora ARGS``."""
    monkeypatch.setattr(sys, "argv", ["udora", *args])
    with pytest.raises(SystemExit) as exit_:
        main()
    out, err = capsys.readouterr()
    return exit_.value.code, out, err


def _raise(error: BaseException):
    def broken(*args, **kwargs):
        raise error

    return broken


def test_an_unknown_name_is_a_user_error_in_one_line(monkeypatch, capsys, bug_folder):
    code, out, err = _udora(monkeypatch, capsys, "run", "--preset", "concrete", "--method", "nope")
    assert code == 2 and not out
    assert err.startswith("error: unknown method 'nope'; valid methods: ")
    assert err.count("\n") == 1 and "blr" in err and "Traceback" not in err
    assert not any(bug_folder.iterdir())  # no traceback file for a user error


def test_a_bad_value_is_a_user_error_in_one_line(monkeypatch, capsys, bug_folder):
    code, out, err = _udora(monkeypatch, capsys, "presets", "show")
    assert (code, out) == (2, "")
    assert err == "error: presets show: give one preset NAME or --all\n"


def test_a_bug_prints_one_line_naming_its_traceback_file(monkeypatch, capsys, bug_folder):
    def list_presets(suite="all"):
        return {}[suite]  # a KeyError: a bug, not an unknown name

    monkeypatch.setattr("udora.oracle.preset.list_presets", list_presets)
    code, out, err = _udora(monkeypatch, capsys, "presets")
    assert code == BUG_EXIT == 3 and not out
    (written,) = bug_folder.iterdir()
    assert err == (
        f"bug: udora {udora.__version__} failed with KeyError: 'all'; "
        f"the traceback is in {written}; please report it\n"
    )
    text = written.read_text()
    assert text.startswith(f"udora {udora.__version__}, Python ")
    assert "command: udora presets\n" in text
    assert "Traceback (most recent call last)" in text
    assert "in list_presets\n    return {}[suite]" in text and text.endswith("KeyError: 'all'\n")


@pytest.mark.parametrize("error", [ZeroDivisionError("division by zero"), ValueError("nan")])
def test_a_bug_inside_a_command_that_catches_user_errors_is_still_a_bug(
    monkeypatch, capsys, bug_folder, tmp_path, error
):
    """``udora export`` catches user errors itself; a ValueError that is not a UserError
    (once reported as "bad input", exit 2) now reaches the bug report."""
    monkeypatch.setattr("udora.experiments.open.tasks.load_task", _raise(error))
    args = ("export", "--out", str(tmp_path / "tasks"), "--presets", "concrete")
    code, _, err = _udora(monkeypatch, capsys, *args)
    assert code == 3 and err.count("\n") == 1
    assert f"failed with {type(error).__name__}: {error};" in err
    (written,) = bug_folder.iterdir()
    assert str(written) in err and f"{type(error).__name__}: {error}" in written.read_text()


def test_a_bug_whose_traceback_cannot_be_written_prints_it(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
    monkeypatch.setattr("udora.oracle.preset.list_presets", _raise(ZeroDivisionError("x")))
    code, _, err = _udora(monkeypatch, capsys, "presets")
    first, *rest = err.splitlines()
    assert code == 3
    assert first.endswith(
        "failed with ZeroDivisionError: x; its traceback follows; please report it"
    )
    assert rest[0] == "Traceback (most recent call last):" and rest[-1] == "ZeroDivisionError: x"


def test_a_full_disk_keeps_its_line_naming_the_path(monkeypatch, capsys, bug_folder):
    full = OSError(errno.ENOSPC, "No space left on device", "/results/run.json")
    monkeypatch.setattr("udora.oracle.preset.list_presets", _raise(full))
    code, _, err = _udora(monkeypatch, capsys, "presets")
    assert (code, err) == (1, "error: /results/run.json: No space left on device\n")
    assert not any(bug_folder.iterdir())
