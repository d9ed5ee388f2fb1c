"""The documentation site (mkdocs.yml) builds with warnings as errors, lists every page of
docs/, and its API reference (docs/api/, generated from the docstrings) names every
function and class users import from ``udora.scoring``, ``udora.methods``,
``udora.experiments.open`` and ``udora.errors``."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import udora.errors
import udora.experiments.open
import udora.methods
import udora.scoring

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return out


def _anchors(site: Path, page: str) -> set[str]:
    return set(re.findall(r'id="([^"]+)"', (site / "api" / page / "index.html").read_text()))


def _nav_pages(entries) -> list[str]:
    pages = []
    for entry in entries:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        pages += _nav_pages(value) if isinstance(value, list) else [value]
    return pages


def test_every_page_of_docs_is_in_the_navigation_and_built(site):
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    nav = _nav_pages(config["nav"])
    pages = sorted(p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").glob("*.md"))
    pages += sorted(f"api/{p.name}" for p in (ROOT / "docs" / "api").glob("*.md"))
    assert sorted(nav) == sorted(pages)
    for page in pages:
        built = "index.html" if page == "index.md" else f"{page.removesuffix('.md')}/index.html"
        assert (site / built).is_file(), page


def test_the_scoring_reference_names_every_public_function(site):
    ids = _anchors(site, "scoring")
    for name in udora.scoring.__all__:
        # `score` shares its name with its module and is rendered from there
        assert {f"udora.scoring.{name}", f"udora.scoring.{name}.{name}"} & ids, name


def test_the_notebook_reference_names_every_public_function(site):
    ids = _anchors(site, "open")
    assert {f"udora.experiments.open.{n}" for n in udora.experiments.open.__all__} <= ids


def test_the_methods_reference_names_what_a_plugin_author_uses(site):
    ids = _anchors(site, "methods")
    for name in [*udora.methods.__all__, "check_method", "TaskKnowledge"]:
        assert any(i.startswith("udora.") and i.endswith(f".{name}") for i in ids), name
    assert "udora.methods.base.UQMethod.fit" in ids  # the members of the contract too


def test_the_errors_reference_names_the_user_error_types(site):
    ids = _anchors(site, "errors")
    assert {"udora.errors.UserError", "udora.errors.UnknownNameError"} <= ids
    assert (
        udora.errors.UserError.__doc__.split("\n")[0]
        in (site / "api/errors/index.html").read_text()
    )
