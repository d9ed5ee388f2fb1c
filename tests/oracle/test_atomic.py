"""Two processes publishing one target at once (oracle/atomic.py): a reader only ever
sees one writer's whole version, and no temporary name is left behind."""

import errno
import multiprocessing as mp
import os
import stat

import numpy as np
import pandas as pd
import pytest

from udora.oracle import atomic

ROUNDS = 150
SIZE = 1 << 17  # 128 KiB: many write calls, so a torn file would show


def _payload(writer: int, round_: int) -> bytes:
    head = f"{writer}:{round_}:".encode()
    return head + bytes([65 + writer]) * (SIZE - len(head))


def _whole(data: bytes) -> bool:
    """Whether ``data`` is exactly one :func:`_payload`."""
    writer, round_, _ = data.split(b":", 2)
    return data == _payload(int(writer), int(round_))


def _write_files(target: str, writer: int, start) -> None:
    start.wait()
    for round_ in range(ROUNDS):
        atomic.write_bytes(target, _payload(writer, round_))


def _publish_folders(target: str, writer: int, replace: bool, start, won) -> None:
    start.wait()
    for round_ in range(ROUNDS):

        def fill(tmp, round_=round_):
            for name in ("a.bin", "b.bin"):  # two files of one version
                (tmp / name).write_bytes(_payload(writer, round_))

        if atomic.publish_folder(target, fill, replace=lambda old: replace):
            won.put((writer, round_))


def _spawn(fn, *args):
    ctx = mp.get_context("spawn")  # no fork of a process that may hold JAX threads
    start = ctx.Barrier(3)
    extra = [ctx.Queue()] if fn is _publish_folders else []
    procs = [ctx.Process(target=fn, args=(*args[:1], w, *args[1:], start, *extra)) for w in (0, 1)]
    for p in procs:
        p.start()
    return procs, start, extra


def test_two_writers_of_one_file_never_mix(tmp_path):
    target = tmp_path / "f.bin"
    procs, start, _ = _spawn(_write_files, str(target))
    start.wait()
    reads = 0
    while any(p.is_alive() for p in procs):
        try:
            data = target.read_bytes()
        except FileNotFoundError:  # before the first rename
            continue
        assert _whole(data), data[:20]
        reads += 1
    for p in procs:
        p.join()
        assert p.exitcode == 0
    assert reads > 0 and _whole(target.read_bytes())
    assert os.listdir(tmp_path) == ["f.bin"]  # no temporary file left


@pytest.mark.parametrize("replace", [False, True], ids=["first wins", "last wins"])
def test_two_publishers_of_one_folder_leave_one_whole_version(tmp_path, replace):
    """``replace=False``: the first folder published stays, every later one is discarded
    (exactly one call reports success); ``replace=True``: each publication replaces the
    last whole. Either way a reader sees one version's two files, never a mix."""
    target = tmp_path / "run"
    procs, start, (won,) = _spawn(_publish_folders, str(target), replace)
    start.wait()
    while any(p.is_alive() for p in procs):
        try:
            a, b = (target / "a.bin").read_bytes(), (target / "b.bin").read_bytes()
        except FileNotFoundError:  # between a move aside and the rename, or before
            continue
        assert _whole(a) and (a == b or replace), a[:20]
    wins = []
    for p in procs:
        p.join()
        assert p.exitcode == 0
    while not won.empty():
        wins.append(won.get())
    a, b = (target / "a.bin").read_bytes(), (target / "b.bin").read_bytes()
    assert _whole(a) and a == b
    assert os.listdir(tmp_path) == ["run"]  # no temporary or moved-aside folder left
    if replace:
        assert len(wins) == 2 * ROUNDS
    else:
        assert len(wins) == 1 and a == _payload(*wins[0])


def test_each_form_reads_back_and_gets_the_umask_modes(tmp_path):
    old = os.umask(0o022)
    try:
        arrays = {"x": np.arange(5.0), "y": np.eye(2)}
        table = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})
        atomic.write_npz(tmp_path / "sub" / "a.npz", arrays)  # makes the parent
        atomic.write_json(tmp_path / "a.json", {"k": [1, 2.5, None]})
        atomic.write_parquet(tmp_path / "a.parquet", table)
        atomic.write_text(tmp_path / "a.txt", "é\n")
        with pytest.raises(ValueError, match="Out of range float values"):
            atomic.write_json(tmp_path / "nan.json", {"k": float("nan")})
        assert atomic.publish_folder(tmp_path / "d", lambda tmp: (tmp / "f").write_text("1"))
    finally:
        os.umask(old)
    with np.load(tmp_path / "sub" / "a.npz") as got:
        assert {k: got[k].tolist() for k in got.files} == {k: v.tolist() for k, v in arrays.items()}
    assert (tmp_path / "a.json").read_text() == '{\n "k": [\n  1,\n  2.5,\n  null\n ]\n}'
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "a.parquet"), table)
    assert (tmp_path / "a.txt").read_bytes() == "é\n".encode()
    assert sorted(os.listdir(tmp_path)) == ["a.json", "a.parquet", "a.txt", "d", "sub"]
    assert stat.S_IMODE((tmp_path / "a.json").stat().st_mode) == 0o644  # mkstemp: 0o600
    assert stat.S_IMODE((tmp_path / "d").stat().st_mode) == 0o755  # mkdtemp: 0o700


def test_a_failing_fill_leaves_the_old_folder_and_no_temporary(tmp_path):
    target = tmp_path / "run"
    atomic.publish_folder(target, lambda tmp: (tmp / "f").write_text("old"))

    def fill(tmp):
        (tmp / "f").write_text("new")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        atomic.publish_folder(target, fill)
    assert (target / "f").read_text() == "old" and os.listdir(tmp_path) == ["run"]


def test_a_figure_is_the_bytes_savefig_writes_in_the_format_of_its_suffix(tmp_path, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")  # a PDF's creation date, else the clock's
    fig, ax = plt.subplots(figsize=(2, 2))
    ax.plot([0, 1], [1, 0])
    try:
        for ext, magic in (("png", b"\x89PNG"), ("pdf", b"%PDF")):
            atomic.write_figure(tmp_path / "out" / f"f.{ext}", fig, dpi=40, bbox_inches="tight")
            fig.savefig(tmp_path / f"direct.{ext}", dpi=40, bbox_inches="tight")
            got = (tmp_path / "out" / f"f.{ext}").read_bytes()
            assert got.startswith(magic) and got == (tmp_path / f"direct.{ext}").read_bytes()
        before = (tmp_path / "out" / "f.pdf").read_bytes()
        # a mathtext error, raised while the figure is drawn: savefig onto the path would
        # have begun the PDF and left it cut short
        ax.set_title(r"$\frac$")
        with pytest.raises(ValueError, match="frac"):
            atomic.write_figure(tmp_path / "out" / "f.pdf", fig)
    finally:
        plt.close(fig)
    assert (tmp_path / "out" / "f.pdf").read_bytes() == before
    assert sorted(os.listdir(tmp_path / "out")) == ["f.pdf", "f.png"]  # no temporary left


def test_a_full_disk_names_the_target_and_keeps_the_old_file(tmp_path):
    target = atomic.write_text(tmp_path / "t.txt", "old")

    def full(fh):
        fh.write(b"par")
        raise OSError(errno.ENOSPC, "No space left on device")  # as fh.write raises it

    with pytest.raises(OSError) as caught:
        atomic.write_with(target, full)
    assert (caught.value.errno, caught.value.filename) == (errno.ENOSPC, str(target))

    def own(fh):
        raise OSError("no runs")  # udora's own message (no errno) is left alone

    with pytest.raises(OSError) as own_error:
        atomic.write_with(target, own)
    assert own_error.value.filename is None and str(own_error.value) == "no runs"
    assert target.read_text() == "old" and os.listdir(tmp_path) == ["t.txt"]
