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
    names = ["rankings", "tuning", "ablation", "meta", "diagnostics"]
    assert [s.name for s in sections.registered()] == names


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
