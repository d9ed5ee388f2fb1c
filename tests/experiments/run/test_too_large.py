"""A task too large for the machine's memory, through the command: ``udora run`` prints
one line ``error: ...`` (exit 2) naming the preset field, the estimate and the memory
available (oracle/memory.py)."""

import pytest

from udora.oracle import memory

RESULTS = "*/*/*/seed-*/result.json"
# the tiny preset's 120-point pool: 4 * 8 * 120^2 bytes; at 60 points a quarter of it
REFUSED = (
    "preset 'tiny': the oracle's dense GP matrices need about 460.8 kB (4 float64 matrices "
    "of 120 x 120: preset.pool_size = 120, drawn jointly up to 10000 points) but 200.0 kB "
    "of memory is available; lower preset.pool_size"
)


@pytest.fixture
def little_memory(monkeypatch):
    monkeypatch.setattr(memory, "available_memory", lambda: 200_000)


def test_udora_run_refuses_a_task_too_large_in_one_line(
    udora, tiny_preset, tmp_path, little_memory
):
    path, data = tiny_preset
    out = tmp_path / "out"
    code, _, err = udora(
        "run", "--preset", path, "--method", "blr", "--data-dir", data, "--out", out
    )
    assert (code, err) == (2, f"error: {REFUSED}\n")
    assert not list(out.glob(RESULTS))
