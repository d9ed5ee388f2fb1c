"""A task too large for the machine's memory, through the commands: ``udora run`` prints
one line ``error: ...`` (exit 2) naming the preset field, the estimate and the memory
available; ``udora bench`` records each of that preset's runs as failed with that message
and runs the other presets (oracle/memory.py)."""

import json

import pytest
import yaml
from processes import last_line

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


def test_bench_records_the_runs_of_a_task_too_large_and_runs_the_others(
    udora, tiny_preset, tmp_path, little_memory
):
    path, data = tiny_preset
    small = yaml.safe_load(path.read_text()) | {"name": "small", "pool_size": 60, "n_train": 20}
    (tmp_path / "small.yaml").write_text(yaml.safe_dump(small))
    out = tmp_path / "out"
    presets = f"{path},{tmp_path / 'small.yaml'}"
    args = ["--presets", presets, "--methods", "blr", "--seeds", "0,1", "--data-dir", data]
    code, text, err = udora("bench", *args, "--out", out)
    assert code == 1, text + err
    assert last_line(text).startswith("4 ran, 2 failed, 0 skipped"), text
    records = [json.loads(p.read_text()) for p in sorted(out.glob(RESULTS))]
    outcome = {(r["preset"], r["seed"]): (r["status"], r["error"]) for r in records}
    assert outcome == {
        ("tiny", 0): ("failed", REFUSED),
        ("tiny", 1): ("failed", REFUSED),
        ("small", 0): ("ok", None),
        ("small", 1): ("ok", None),
    }
