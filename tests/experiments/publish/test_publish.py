"""The release artefact (udora.experiments.publish): built from results folders, read back
only when its checksums match, the report and the leaderboard page regenerated from it,
and a fresh run of a shipped task agreeing with its row."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from udora.experiments.cli.main import app
from udora.experiments.publish.artefact import (
    build_release,
    load_baseline,
    read_release,
    release_folder,
    released_tuned_files,
)
from udora.experiments.results.store import load_runs
from udora.experiments.run.execute import run_one

SMALL = {"n_members": 2, "n_estimators": 10}


def _runs(tiny_preset, root, methods=("blr", "catboost_ps"), seeds=(0,)):
    path, data = tiny_preset
    for m in methods:
        for s in seeds:
            over = SMALL if m == "catboost_ps" else {}
            assert run_one(path, m, s, over, root, data_dir=data).status == "ok"
    return root


def test_a_release_is_read_back_only_when_its_checksums_match(tiny_preset, tmp_path):
    runs = _runs(tiny_preset, tmp_path / "dev")
    manifest = json.loads(build_release([runs], tmp_path / "rel").read_text())
    table, curves, _ = read_release(tmp_path / "rel")
    fresh, _ = load_runs(runs)
    assert manifest["runs"] == len(table) == len(fresh) == 2 and manifest["ok"] == 2
    assert manifest["built_from"] == ["dev"] and "run_dir" not in table
    assert table["commit"].tolist() == fresh["commit"].tolist()  # what each run recorded
    recorded: dict[str, set] = {}  # the libraries each result.json names, read directly
    for path in sorted(runs.glob("*/*/*/seed-*/result.json")):
        for lib, version in json.loads(path.read_text())["versions"].items():
            recorded.setdefault(lib, set()).add(version)
    recorded.pop("udora")
    assert recorded and manifest["libraries"] == {k: sorted(v) for k, v in recorded.items()}
    assert {f"version.{k}" for k in recorded} <= set(table.columns)
    assert all(not r.startswith("/") and r.startswith("tiny/") for r in table["run"])
    digest = hashlib.sha256((tmp_path / "rel" / "results.parquet").read_bytes()).hexdigest()
    assert manifest["files"]["results.parquet"] == digest
    merged = fresh.drop(columns="run_dir").merge(table, on=["config", "seed"], suffixes=("", "_r"))
    np.testing.assert_array_equal(merged["spearman_eu"], merged["spearman_eu_r"])
    key = next(iter(curves))
    assert curves[key]["calib_eu_estimate"] and len(curves) == 2
    t = table.copy()
    t.loc[0, "spearman_eu"] = 0.99  # a changed number
    t.to_parquet(tmp_path / "rel" / "results.parquet", index=False)
    with pytest.raises(ValueError, match=r"results\.parquet: its SHA-256 is not the one"):
        read_release(tmp_path / "rel")
    with pytest.raises(ValueError, match="SHA-256"):
        load_baseline(tmp_path / "rel")


def test_a_new_version_keeps_the_base_rows_of_the_methods_it_does_not_rerun(tiny_preset, tmp_path):
    """`udora release build NEW --base OLD`: OLD's rows and curves of every method NEW does
    not run, NEW's rows of the rest; the manifest counts the version up and names the
    base's files and the methods replaced; a base without the method is refused."""
    old = _runs(tiny_preset, tmp_path / "old", seeds=(0, 1))
    build_release([old], tmp_path / "v1")
    v1, v1_curves, m1 = read_release(tmp_path / "v1")
    assert m1["version"] == 1 and "base" not in m1
    path, data = tiny_preset
    new = tmp_path / "new"
    for s in (0, 1):  # blr rerun with another config: its rows must replace the old ones
        run = run_one(path, "blr", s, {"alpha": 2.0}, new, data_dir=data)
        assert run.status == "ok"
    m2 = json.loads(build_release([new], tmp_path / "v2", base=tmp_path / "v1").read_text())
    v2, v2_curves, _ = read_release(tmp_path / "v2")
    assert m2["version"] == 2 and m2["base"]["version"] == 1
    assert m2["base"]["files"] == m1["files"] and m2["base"]["replaced_methods"] == ["blr"]
    assert m2["built_from"] == [f"{tmp_path / 'v1'}@v1:old", "new"] and m2["runs"] == 4
    kept = v1[v1["method"] == "catboost_ps"].set_index("seed")
    again = v2[v2["method"] == "catboost_ps"].set_index("seed")
    np.testing.assert_array_equal(kept["spearman_eu"], again["spearman_eu"])
    for key, curves in v1_curves.items():  # the kept rows' curves, entry for entry
        if key[1] == "catboost_ps":
            assert v2_curves[key] == curves
    fresh, found = load_runs(new)
    assert set(v2.loc[v2["method"] == "blr", "config"]) == set(fresh["config"])
    for key, curves in found.items():
        assert v2_curves[key] == curves
    from udora.experiments.publish.page import _version_lines

    assert _version_lines(m2)[0].startswith("Version 2: blr rerun on version 1 (`release@v1`)")
    assert _version_lines(m1) == []
    with pytest.raises(FileNotFoundError, match="not a release folder"):
        build_release([new], tmp_path / "v3", base=tmp_path / "nowhere")
    only = tmp_path / "only"
    build_release([_runs(tiny_preset, tmp_path / "cb", methods=("catboost_ps",))], only)
    with pytest.raises(ValueError, match="no rows of blr; a new version reruns"):
        build_release([new], tmp_path / "v3", base=only)


def test_a_release_built_from_parts_is_the_release_built_from_their_runs(tiny_preset, tmp_path):
    """Release folders among the inputs (parts, built apart: one per preset of a protocol
    run over several machines) give the rows and curves a build from their runs gives;
    the manifest names the parts' files; a part older than a column gets load_runs'
    value for it; a tampered part and a run twice (a part and its own runs) are refused."""
    a = _runs(tiny_preset, tmp_path / "a", methods=("blr",), seeds=(0, 1))
    b = _runs(tiny_preset, tmp_path / "b", methods=("catboost_ps",))
    path, data = tiny_preset
    assert run_one(path, "blr", 0, {"alpha": 2.0}, tmp_path / "c", data_dir=data).status == "ok"
    direct = json.loads(build_release([a, b, tmp_path / "c"], tmp_path / "direct").read_text())
    pa = json.loads(build_release([a], tmp_path / "part-a").read_text())
    build_release([b], tmp_path / "part-b")
    # part-a as a release built before the kind, has_split and n_acquired columns
    old = pd.read_parquet(tmp_path / "part-a" / "results.parquet")
    old.drop(columns=["kind", "has_split", "n_acquired"]).to_parquet(
        tmp_path / "part-a" / "results.parquet", index=False
    )
    pa["files"]["results.parquet"] = hashlib.sha256(
        (tmp_path / "part-a" / "results.parquet").read_bytes()
    ).hexdigest()
    (tmp_path / "part-a" / "manifest.json").write_text(json.dumps(pa))
    parts = [tmp_path / "part-a", tmp_path / "part-b", tmp_path / "c"]
    built = json.loads(build_release(parts, tmp_path / "whole").read_text())
    one, one_curves, _ = read_release(tmp_path / "direct")
    two, two_curves, _ = read_release(tmp_path / "whole")
    pd.testing.assert_frame_equal(one, two[one.columns], check_dtype=False)
    assert one_curves == two_curves and built["runs"] == direct["runs"] == 4
    assert built["built_from"] == ["part-a:a", "part-b:b", "c"]
    assert built["parts"]["part-a"] == pa["files"] and set(built["parts"]) == {"part-a", "part-b"}
    assert set(two["kind"]) == {"regression"} and two["has_split"].all()
    assert (two["n_acquired"] == 0).all()
    with pytest.raises(ValueError, match="tiny blr seed 0: more than one run"):
        build_release([tmp_path / "part-a", a], tmp_path / "twice")
    import shutil

    shutil.copytree(tmp_path / "part-b", tmp_path / "elsewhere" / "part-a")
    with pytest.raises(ValueError, match="two parts named 'part-a'"):
        build_release([tmp_path / "part-a", tmp_path / "elsewhere" / "part-a"], tmp_path / "named")
    (tmp_path / "part-b" / "curves.json.gz").write_bytes(b"not the curves")
    with pytest.raises(ValueError, match=r"curves\.json\.gz: its SHA-256 is not the one"):
        build_release(parts, tmp_path / "tampered")


def test_a_release_holds_one_set_of_sampled_targets_per_task():
    """Parts (or results folders) whose runs of one task were scored on other sampled
    oracle arrays are refused, and so is a row whose arrays are not its task's listed
    ones: paired comparisons with the release would mix two sets of targets."""
    from udora.experiments.publish.artefact import _add_oracles, _check_oracles

    a, b = "a" * 64, "b" * 64
    oracles = _add_oracles({}, {"t1": {"sha256": a, "preset": "p", "seed": 0}}, "part-a")
    assert _add_oracles(dict(oracles), {"t1": {"sha256": a}}, "again")["t1"]["sha256"] == a
    with pytest.raises(ValueError, match=r"part-b: task t1 \(p seed 0\) was scored on other"):
        _add_oracles(oracles, {"t1": {"sha256": b, "preset": "p", "seed": 0}}, "part-b")
    rows = pd.DataFrame(
        {
            "preset": ["p", "p", "p"],
            "config": ["m1", "m2", "m3"],
            "seed": [0, 0, 0],
            "status": ["ok", "failed", "ok"],
            "task_hash": ["t1", "t1", "t1"],
            "oracle_sha256": [a, b, b],
        }
    )
    _check_oracles(rows.iloc[:2], oracles)  # a failed run's arrays are not its scores
    with pytest.raises(ValueError, match="p m3 seed 0: scored on oracle arrays bbbbbbbbbbbb, not"):
        _check_oracles(rows, oracles)


def test_a_run_in_two_folders_is_refused(tiny_preset, tmp_path):
    a = _runs(tiny_preset, tmp_path / "a", methods=("blr",))
    b = _runs(tiny_preset, tmp_path / "b", methods=("blr",))
    with pytest.raises(ValueError, match="tiny blr seed 0: more than one run"):
        build_release([a, b], tmp_path / "rel", "x")


@pytest.mark.slow
def test_report_page_and_baseline_from_a_release(tmp_path, monkeypatch):
    """Five presets, two ranked configs and a reference: build, page, report, baseline;
    then a fresh run of one shipped task, config and core count agrees with its row."""
    rng = np.random.default_rng(0)
    data = tmp_path / "data"
    data.mkdir()
    X = rng.normal(size=(100, 2))
    pd.DataFrame(X, columns=["a", "b"]).assign(target=np.sin(X[:, 0]) + X[:, 1]).to_csv(
        data / "t.csv.gz", index=False
    )
    presets = []
    for i in range(5):
        p = {
            "name": f"t{i}",
            "suite": "dev" if i < 3 else "heldout",
            "source": {"file": "t.csv.gz"},
            "features": ["a", "b"],
            "pool_size": 100,
            "n_train": 40,
            "kernel": [{"type": "rbf", "variance": 1.0, "lengthscale": [0.5 + 0.3 * i, 1.0]}],
            "noise": {"std_min": 0.1, "std_max": 0.3},
            "shift": [0.4, 0.3, 0.2, 0.1, 0.0],
        }
        (tmp_path / f"t{i}.yaml").write_text(yaml.safe_dump(p))
        presets.append(tmp_path / f"t{i}.yaml")
    for i, path in enumerate(presets):
        root = tmp_path / ("dev" if i < 3 else "heldout")
        for m in ("blr", "catboost_ps", "gp_linear"):
            over = SMALL if m == "catboost_ps" else {}
            assert run_one(path, m, 0, over, root, data_dir=data).status == "ok"
    cli = CliRunner()
    built = cli.invoke(
        app,
        [
            "release",
            "build",
            str(tmp_path / "dev"),
            str(tmp_path / "heldout"),
            "--out",
            str(tmp_path / "rel"),
        ],
    )
    assert built.exit_code == 0, built.output
    docs = tmp_path / "docs"
    page = cli.invoke(app, ["release", "page", str(tmp_path / "rel"), "--docs", str(docs)])
    assert page.exit_code == 0, page.output
    text = (docs / "leaderboard.md").read_text()
    assert "15 runs (15 ok, 0 failed) of 3 configs on 5 presets" in text
    recorded = set(load_runs(tmp_path / "dev")[0]["commit"].fillna("unknown"))
    assert len(recorded) == 1  # each run's own: the checkout's HEAD, or none from a wheel
    assert f"commit `{recorded.pop()}` (source SHA-256 `" in text and "## The dev suite" in text
    assert "| EU Spearman | 5 | 2 | wilcoxon |" in text  # gp_linear is a reference
    assert "a ranking needs 5 presets" in text  # each suite alone has 2 or 3
    report = cli.invoke(app, ["report", str(tmp_path / "rel"), "--out", str(tmp_path / "site")])
    assert report.exit_code == 0, report.output
    md = (tmp_path / "site" / "report.md").read_text()
    assert md.startswith("# udora report\n\n15 runs (15 ok, 0 failed) on 5 presets")
    assert (tmp_path / "site" / "calibration_eu.png").stat().st_size > 1000
    # a fresh run of a shipped task, config and cores: the same row
    fresh = run_one(presets[1], "catboost_ps", 0, SMALL, tmp_path / "again", data_dir=data)
    table, _, _ = read_release(tmp_path / "rel")
    row = table[(table["preset"] == "t1") & (table["method"] == "catboost_ps")].iloc[0]
    again, _ = load_runs(tmp_path / "again")
    assert again["task_hash"].iloc[0] == row["task_hash"]
    assert again["config_hash"].iloc[0] == row["config_hash"]
    for metric in ("spearman_eu", "spearman_au", "nll", "crps"):
        assert again[metric].iloc[0] == pytest.approx(row[metric], rel=1e-9, abs=1e-12)
    assert fresh.status == "ok"


def test_an_earlier_shipped_version_is_named_release_at_v(tmp_path, monkeypatch):
    """`release@vN`: the shipped folder itself for its own version, its `vN/` subfolder
    for an earlier one, nothing for a version it does not hold."""
    from importlib import resources

    (tmp_path / "v1").mkdir()
    (tmp_path / "manifest.json").write_text(json.dumps({"version": 2}))
    (tmp_path / "v1" / "manifest.json").write_text(json.dumps({"version": 1}))
    monkeypatch.setattr(resources, "files", lambda package: tmp_path)
    assert release_folder("release") == tmp_path == release_folder("release@v2")
    assert release_folder("release@v1") == tmp_path / "v1"
    assert release_folder("release@v3") is None and release_folder("release@vx") is None


def _by_size(preset, seeds):
    """By-size meta rows as ``udora meta`` writes them, for ``seeds`` of ``preset``."""
    return pd.DataFrame(
        [
            {"preset": preset, "seed": s, "observable": o, "size": 50, "points": 50, "tau": t}
            for s in seeds
            for o, t in (("nll", 0.1 + s / 3), ("brier", -0.7))  # not exact in binary
        ]
    )


def test_parts_carry_their_by_size_meta_rows_into_the_release(tiny_preset, tmp_path):
    """Each part's meta_by_size.csv (rows `udora meta` computed from its run folders, which
    a release does not keep) is joined into the release's, listed with its SHA-256 in the
    manifest; rows of a cell the part has no run of, a file of other columns, and a part
    without one beside parts with one are refused."""
    a = _runs(tiny_preset, tmp_path / "a", methods=("blr",), seeds=(0, 1))
    b = _runs(tiny_preset, tmp_path / "b", methods=("blr",), seeds=(2,))
    build_release([a], tmp_path / "part-a")
    build_release([b], tmp_path / "part-b")
    _by_size("tiny", (0, 1)).to_csv(tmp_path / "part-a" / "meta_by_size.csv", index=False)
    _by_size("tiny", (2,)).to_csv(tmp_path / "part-b" / "meta_by_size.csv", index=False)
    parts = [tmp_path / "part-b", tmp_path / "part-a"]
    manifest = json.loads(build_release(parts, tmp_path / "rel").read_text())
    shipped = pd.read_csv(tmp_path / "rel" / "meta_by_size.csv", float_precision="round_trip")
    expected = _by_size("tiny", (0, 1, 2))  # cells in order, each cell's rows as written
    pd.testing.assert_frame_equal(shipped, expected, check_exact=True)
    part_text = (tmp_path / "part-a" / "meta_by_size.csv").read_text()
    assert (tmp_path / "rel" / "meta_by_size.csv").read_text().startswith(part_text)
    digest = hashlib.sha256((tmp_path / "rel" / "meta_by_size.csv").read_bytes()).hexdigest()
    assert manifest["files"]["meta_by_size.csv"] == digest
    own = hashlib.sha256((tmp_path / "part-a" / "meta_by_size.csv").read_bytes()).hexdigest()
    assert manifest["parts"]["part-a"]["meta_by_size.csv"] == own  # the part's, checksummed
    import shutil

    shutil.copytree(tmp_path / "rel", tmp_path / "rel-ok")
    (tmp_path / "rel" / "meta_by_size.csv").write_text(expected.iloc[:2].to_csv(index=False))
    with pytest.raises(ValueError, match=r"meta_by_size\.csv: its SHA-256 is not the one"):
        read_release(tmp_path / "rel")
    _by_size("tiny", (2, 7)).to_csv(tmp_path / "part-b" / "meta_by_size.csv", index=False)
    with pytest.raises(ValueError, match="rows of tiny seed 7, which the part has no runs of"):
        build_release(parts, tmp_path / "stray")
    _by_size("tiny", (2,)).drop(columns="points").to_csv(
        tmp_path / "part-b" / "meta_by_size.csv", index=False
    )
    with pytest.raises(ValueError, match="expected the columns preset, seed, observable, size"):
        build_release(parts, tmp_path / "columns")
    _by_size("tiny", (2,)).assign(seed="x").to_csv(
        tmp_path / "part-b" / "meta_by_size.csv", index=False
    )
    with pytest.raises(ValueError, match="expected an integer seed on every row"):
        build_release(parts, tmp_path / "seeds")
    _by_size("tiny", (2,)).to_csv(tmp_path / "part-b" / "meta_by_size.csv", index=False)
    c = _runs(tiny_preset, tmp_path / "c", methods=("catboost_ps",), seeds=(1,))
    build_release([c], tmp_path / "part-c")  # another method's runs of seed 1
    _by_size("tiny", (1,)).to_csv(tmp_path / "part-c" / "meta_by_size.csv", index=False)
    with pytest.raises(ValueError, match="tiny seed 1: by-size rows in two parts"):
        build_release([tmp_path / "part-a", tmp_path / "part-c"], tmp_path / "twice")
    with pytest.raises(ValueError, match="a new version of a release with by-size meta rows"):
        build_release([tmp_path / "part-a"], tmp_path / "based", base=tmp_path / "rel-ok")
    (tmp_path / "part-b" / "meta_by_size.csv").unlink()
    with pytest.raises(ValueError, match=r"part-b: no meta_by_size\.csv while other parts"):
        build_release(parts, tmp_path / "some")
    assert (
        "meta_by_size.csv"
        not in json.loads(build_release([tmp_path / "part-b"], tmp_path / "rel").read_text())[
            "files"
        ]
    )
    assert not (tmp_path / "rel" / "meta_by_size.csv").exists()  # the earlier build's, gone


BLR = ("--configs", "blr")


def test_udora_meta_reads_a_release_without_writing_into_it(tiny_preset, tmp_path):
    """`udora meta RELEASE` ranks the release's stored metrics and draws the by-size rows
    it ships, as they are; it needs --out (a release is read only), and a release without
    by-size rows, sizes it did not compute, or --configs (its rows rank all its configs)
    are one clear error each."""
    runs = _runs(tiny_preset, tmp_path / "dev", methods=("blr", "catboost_ps", "gp_linear"))
    path, data = tiny_preset  # a fourth config: udora meta's default --min-methods
    assert run_one(path, "blr", 0, {"alpha": 2.0}, runs, data_dir=data).status == "ok"
    build_release([runs], tmp_path / "bare")
    build_release([runs], tmp_path / "part")
    rows = _by_size("tiny", (0,))
    rows.to_csv(tmp_path / "part" / "meta_by_size.csv", index=False)
    build_release([tmp_path / "part"], tmp_path / "rel")
    before = sorted(p.name for p in (tmp_path / "rel").iterdir())
    cli = CliRunner()
    REL, NONE = ("meta", str(tmp_path / "rel")), ("--sizes", "")
    fails = {
        "is a release, read only; name an output folder": ["meta", str(tmp_path / "rel")],
        "read only; name an output folder outside it": [*REL, "--out", REL[1] + "/m", *NONE],
        "computed with the defaults": [*REL, "--out", "m", "--sizes", "50", "--repeats", "5"],
        "ships no meta_by_size.csv": ["meta", str(tmp_path / "bare"), "--out", "m"],
        "ships rows for 50 points, not 200": ["meta", str(tmp_path / "rel"), "--out", "m"],
        "--configs: ": ["meta", str(tmp_path / "rel"), "--out", "m", "--sizes", "50", *BLR],
    }
    for message, args in fails.items():
        result = cli.invoke(app, args)
        assert result.exit_code == 2 and message in result.output, (message, result.output)
    out = tmp_path / "m"
    args = ["meta", str(tmp_path / "rel"), "--out", str(out), "--sizes", "50", "--boot"]
    result = cli.invoke(app, [*args, "20"])
    assert result.exit_code == 0, result.output
    shown = (out / "meta_by_size.csv").read_text()
    assert shown == (tmp_path / "part" / "meta_by_size.csv").read_text()  # to the last digit
    assert (out / "meta_by_size.png").is_file()
    page = (out / "meta.md").read_text()  # the mean over cells per observable and size
    assert "| observable | 50 |\n|---|---|\n| nll | +0.10 |\n| brier | -0.70 |\n" in page
    stored, _ = load_runs(runs)  # the release's taus are its runs' stored metrics'
    from udora.experiments.meta.outputs import write_meta

    direct = write_meta(stored, tmp_path / "direct", n_boot=20, rescore=False)
    pd.testing.assert_frame_equal(pd.read_csv(out / "meta_cells.csv"), direct["cells"])
    assert sorted(p.name for p in (tmp_path / "rel").iterdir()) == before


def test_a_release_names_its_tuned_configs_where_it_ships_them(tiny_preset, tmp_path):
    """A row's tuned_file is the config's path in the release's tuned/ folder, whatever
    machine path the run recorded (here a part's rows); a file outside udora tune's
    layout is refused naming it."""
    from udora.experiments.publish.artefact import _shipped_tuned

    runs = _runs(tiny_preset, tmp_path / "dev", methods=("blr", "catboost_ps"))
    manifest = json.loads(build_release([runs], tmp_path / "part").read_text())
    table = pd.read_parquet(tmp_path / "part" / "results.parquet")
    table["tuned_file"] = ["/home/someone/tuned/tiny/blr.yaml", None]  # blr, catboost_ps
    table.to_parquet(tmp_path / "part" / "results.parquet", index=False)
    digest = hashlib.sha256((tmp_path / "part" / "results.parquet").read_bytes()).hexdigest()
    manifest["files"]["results.parquet"] = digest
    (tmp_path / "part" / "manifest.json").write_text(json.dumps(manifest))
    build_release([tmp_path / "part"], tmp_path / "rel")
    shipped = pd.read_parquet(tmp_path / "rel" / "results.parquet").set_index("method")
    assert shipped.loc["blr", "tuned_file"] == "tuned/tiny/blr.yaml"
    assert shipped.loc["catboost_ps", "tuned_file"] is None
    assert _shipped_tuned("D:/t/tiny/blr.yaml", "tiny", "blr") == "tuned/tiny/blr.yaml"
    with pytest.raises(ValueError, match=r"tiny blr: its run read the tuned config /x/other\.yaml"):
        _shipped_tuned("/x/other.yaml", "tiny", "blr")


@pytest.mark.parametrize("name", ["release@v2", "release@v1"])
def test_the_shipped_regression_releases_read_their_tuned_configs_where_they_ship_them(name):
    """Versions 1 and 2 recorded the machine path each run read its tuned config from;
    read back, each tuned row names the release's own tuned/<preset>/<method>.yaml, and
    that file's chosen values are the hyperparameters the run recorded in its row."""
    folder = release_folder(name)
    table, _, _ = read_release(folder)
    assert table["tuned_file"].dropna().str.startswith("/").all()  # as they were built
    table = table.assign(tuned_file=released_tuned_files(folder, table)).dropna(
        subset=["tuned_file"]
    )
    assert len(table) > 400
    for r in table.drop_duplicates(["preset", "method"]).itertuples(index=False):
        chosen = yaml.safe_load(Path(r.tuned_file).read_text())["config"]
        for k, v in chosen.items():
            got = getattr(r, k)
            if isinstance(v, float):
                assert got == pytest.approx(v, rel=1e-12), (r.preset, r.method, k)
            else:
                assert got == v, (r.preset, r.method, k)


def test_a_release_row_names_its_tuned_config_in_the_release_or_as_recorded(tmp_path):
    """Read back: a machine path (POSIX or Windows) or the shipped relative path names the
    release's tuned/<preset>/<method>.yaml; no config stays None; a path outside udora
    tune's layout stays as recorded (the report says it cannot read it), never an error."""
    table = pd.DataFrame(
        {
            "preset": ["tiny"] * 5,
            "method": ["blr", "blr", "blr", "catboost_ps", "blr"],
            "tuned_file": [
                "/home/me/tuned/tiny/blr.yaml",
                "D:\\runs\\tuned\\tiny\\blr.yaml",
                "tuned/tiny/blr.yaml",
                None,
                "/x/other.yaml",
            ],
        }
    )
    shipped = str(tmp_path / "tuned" / "tiny" / "blr.yaml")
    assert released_tuned_files(tmp_path, table) == [
        shipped,
        shipped,
        shipped,
        None,
        "/x/other.yaml",
    ]
