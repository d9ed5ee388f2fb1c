"""Offline is a first-class mode: a preset whose table is found nowhere fails in seconds
with one line naming the preset, where udora looked and what to set; the answer is
remembered for the process, so a grid asks once (docs/running.md, "Offline").

The OpenML server is a port on this machine that nothing listens on (refused at once), or
a connection that times out (simulated); no test reaches outside the machine.
"""

from __future__ import annotations

import socket
import time

import openml
import pytest

from udora.oracle import data
from udora.oracle.preset import load_preset


@pytest.fixture
def no_server(monkeypatch, tmp_path):
    """OpenML's server is a closed local port, its cache an empty folder, nothing asked yet."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again when the block ends: refused
    monkeypatch.setattr(openml.config, "server", f"http://127.0.0.1:{port}/api/v1/xml")
    monkeypatch.setattr(data, "openml_cache_dir", lambda i: tmp_path / "openml" / str(i))
    monkeypatch.setattr(data, "_UNREACHABLE", {})
    monkeypatch.setattr(data, "_NOT_FOUND", {})
    monkeypatch.delenv("UDORA_DATA_DIR", raising=False)
    monkeypatch.delenv("UDORA_OFFLINE", raising=False)
    return port


def test_an_unreachable_server_fails_fast_with_one_line_naming_what_to_set(no_server):
    preset = load_preset("protein")  # OpenML only: no package ships it
    start = time.perf_counter()
    with pytest.raises(data.DataNotFoundError) as err:
        data.load_table_with_source(preset)
    assert time.perf_counter() - start < 5.0
    message = str(err.value)
    assert "\n" not in message
    for part in (
        "preset 'protein': no data found",
        "UDORA_DATA_DIR unset",
        f"OpenML {preset.source.openml}",
        "127.0.0.1 cannot be reached",
        "set UDORA_DATA_DIR (or pass --data-dir), or UDORA_OFFLINE=1 to skip OpenML",
    ):
        assert part in message, (part, message)


def test_the_answer_is_remembered_for_the_process(no_server, monkeypatch):
    preset = load_preset("protein")
    with pytest.raises(data.DataNotFoundError) as first:
        data.load_table_with_source(preset)

    def fail(*args, **kwargs):
        raise AssertionError("asked again")

    monkeypatch.setattr(socket, "create_connection", fail)
    monkeypatch.setattr(openml.datasets, "get_dataset", fail)
    for _ in range(3):
        with pytest.raises(data.DataNotFoundError) as again:
            data.load_table_with_source(preset)
        assert str(again.value) == str(first.value)


def test_a_server_that_does_not_answer_is_given_up_after_the_probe_timeout(no_server, monkeypatch):
    seen = []

    def silent(address, timeout):
        seen.append(timeout)
        raise TimeoutError("timed out")

    monkeypatch.setattr(socket, "create_connection", silent)
    monkeypatch.setattr(openml.datasets, "get_dataset", lambda *a, **k: pytest.fail("asked"))
    with pytest.raises(data.DataNotFoundError, match=r"cannot be reached \(TimeoutError"):
        data.load_table_with_source(load_preset("kin8nm"))
    with pytest.raises(data.DataNotFoundError):
        data.load_table_with_source(load_preset("protein"))  # the server is known: not probed
    assert seen == [data.PROBE_SECONDS]


def test_offline_skips_openml_without_probing(no_server, monkeypatch):
    monkeypatch.setenv("UDORA_OFFLINE", "1")
    monkeypatch.setattr(socket, "create_connection", lambda *a, **k: pytest.fail("probed"))
    with pytest.raises(data.DataNotFoundError, match="downloads off"):
        data.load_table_with_source(load_preset("protein"))


def test_a_table_that_appears_later_in_another_folder_is_found(shared_data, no_server):
    preset = load_preset("protein")
    with pytest.raises(data.DataNotFoundError):
        data.load_table_with_source(preset)
    X, y, source = data.load_table_with_source(preset, shared_data)
    assert source.kind == "file" and X.shape[0] == y.shape[0] > 0
