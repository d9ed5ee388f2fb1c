"""Report sections are found by name: a capability adds one without editing the report."""

import textwrap

import pytest

import udora.experiments
from udora.experiments.report import sections
from udora.experiments.report.write import write_report
from udora.experiments.run.execute import run_one

EXTRA = """
from udora.experiments.results.sections import ReportSection


def _write(ctx):
    ok = ctx.table[ctx.table["status"] == "ok"]
    return ["## Extra capability", "", f"{len(ok)} ok runs of {sorted(set(ok['method']))}", "",
            ctx.markdown(ok[["method", "seed"]], index=False), ""]


SECTION = ReportSection("extra", "Extra capability", 25, _write)
"""


@pytest.fixture
def extra_capability(tmp_path, monkeypatch):
    """A capability folder outside the package, on udora.experiments' search path."""
    folder = tmp_path / "plugins"
    (folder / "extra").mkdir(parents=True)
    (folder / "extra" / "__init__.py").write_text("")
    (folder / "extra" / "section.py").write_text(textwrap.dedent(EXTRA))
    monkeypatch.setattr(udora.experiments, "__path__", [*udora.experiments.__path__, str(folder)])
    sections._capabilities.cache_clear()
    yield
    sections._capabilities.cache_clear()


def test_the_shipped_sections_come_in_their_order():
    names = ["rankings", "tuning", "ablation", "meta", "joint", "diagnostics", "classification"]
    assert [s.name for s in sections.registered()] == names


@pytest.mark.slow  # seconds each: in the slow set (CI runs it)
def test_a_new_capability_writes_its_section_and_page(extra_capability, tiny_preset, tmp_path):
    path, data = tiny_preset
    for seed in (0, 1):
        assert run_one(path, "blr", seed, {}, tmp_path / "runs", data_dir=data).status == "ok"
    assert list(sections.titles())[:4] == ["rankings", "tuning", "ablation", "extra"]  # by order
    report = write_report(tmp_path / "runs").read_text()
    assert "## Extra capability\n\n2 ok runs of ['blr']" in report
    assert "| blr | 0 |" in report and "| blr | 1 |" in report
    page = (tmp_path / "runs" / "report" / "extra.html").read_text()
    assert "2 ok runs of" in page and "<table>" in page
    index = (tmp_path / "runs" / "report" / "index.html").read_text()
    assert 'href="extra.html"' in index and 'href="tuning.html"' not in index  # no tuned runs


def test_a_section_module_without_a_section_is_named(tmp_path, monkeypatch):
    folder = tmp_path / "plugins"
    (folder / "broken").mkdir(parents=True)
    (folder / "broken" / "__init__.py").write_text("")
    (folder / "broken" / "section.py").write_text("SECTION = 'not a section'\n")
    monkeypatch.setattr(udora.experiments, "__path__", [*udora.experiments.__path__, str(folder)])
    sections._capabilities.cache_clear()
    try:
        with pytest.raises(TypeError, match=r"udora\.experiments\.broken\.section: expected"):
            sections.registered()
    finally:
        sections._capabilities.cache_clear()


@pytest.mark.slow  # 3-14 s: the default set's budget
def test_a_report_is_not_written_over_a_folder_of_other_files(tiny_preset, tmp_path):
    """`report --out` a folder holding files a report did not write is refused, touching
    nothing; a folder a report wrote (its marker, or an older report's report.md) and an
    empty one are written."""
    from typer.testing import CliRunner

    from udora.experiments.cli.main import app
    from udora.experiments.run.execute import run_one

    path, data = tiny_preset
    assert run_one(path, "blr", 0, None, tmp_path / "res", data_dir=data).status == "ok"
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "index.html").write_text("my own page")
    result = CliRunner().invoke(app, ["report", str(tmp_path / "res"), "--out", str(mine)])
    assert result.exit_code == 2 and "holds files udora report did not write" in result.output
    assert [p.name for p in mine.iterdir()] == ["index.html"]
    assert (mine / "index.html").read_text() == "my own page"
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "todo.txt").write_text("mine")  # a file of no report's name: left alone
    assert (
        CliRunner().invoke(app, ["report", str(tmp_path / "res"), "--out", str(notes)]).exit_code
        == 0
    )
    assert (notes / "todo.txt").read_text() == "mine" and (notes / "index.html").is_file()
    for _ in range(2):  # a new folder, then a second report into a report's folder
        result = CliRunner().invoke(
            app, ["report", str(tmp_path / "res"), "--out", str(tmp_path / "empty")]
        )
        assert result.exit_code == 0, result.output
    old = tmp_path / "old"
    old.mkdir()
    (old / "report.md").write_text("# udora report\n\nfrom an earlier udora")
    assert (
        CliRunner().invoke(app, ["report", str(tmp_path / "res"), "--out", str(old)]).exit_code == 0
    )
