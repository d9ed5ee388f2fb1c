"""docs/evaluate_any_model.md runs: its ```python blocks (not the ```python no-run ones)
and its ```bash blocks (`udora export`, `udora score`, with the installed `udora`), in
the page's order, in one namespace and one temporary working folder; its forms tables are
FORMS and CLASSIFICATION_FORMS."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from udora.experiments.open.tasks import CLASSIFICATION_FORMS, FORMS

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs" / "evaluate_any_model.md"
BLOCK = re.compile(r"^```(?P<lang>\w+)(?P<tag>[^\n]*)\n(?P<body>.*?)^```", re.S | re.M)
UDORA = Path(sys.executable).parent / "udora"


def _blocks() -> list[tuple[str, str, str]]:
    """``(language, tag after it, body)`` of every fenced block, in the page's order."""
    return [(m["lang"], m["tag"].strip(), m["body"]) for m in BLOCK.finditer(DOC.read_text())]


def _run_shell(body: str, cwd: Path) -> None:
    """Each line of a bash block, one `udora ...` command, run with the venv's udora."""
    for line in filter(None, (ln.strip() for ln in body.splitlines())):
        args = shlex.split(line)
        assert args[0] == "udora", f"a bash block of the doc runs only udora commands: {line}"
        proc = subprocess.run([str(UDORA), *args[1:]], cwd=cwd, capture_output=True, text=True)
        assert proc.returncode == 0, f"{line}\n{proc.stdout}\n{proc.stderr}"


def test_the_page_has_its_blocks():
    kinds = [(lang, tag) for lang, tag, _ in _blocks()]
    assert kinds.count(("python", "")) == 2 and ("python", "no-run") in kinds
    assert kinds.count(("bash", "")) == 2
    assert all(tag in ("", "no-run") for _, tag in kinds)


def _section(title: str) -> str:
    text = DOC.read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else None]


@pytest.mark.parametrize(
    ("section", "forms"),
    [("Prediction forms", FORMS), ("Classification tasks", CLASSIFICATION_FORMS)],
)
def test_the_forms_tables_are_the_forms(section, forms):
    rows = dict(re.findall(r"^\| `(\w+)` \| (.+?) \|$", _section(section), re.M))
    assert set(rows) == set(forms)
    for form, need in forms.items():
        assert rows[form] == "; ".join(f"`{k}` {v}" for k, v in need.items()), form


@pytest.mark.slow  # three processes that build tasks: ~40 s; CI runs the slow set too
def test_the_page_runs_in_order(tmp_path, monkeypatch):
    if not UDORA.is_file():
        pytest.skip(f"no udora executable beside {sys.executable}")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "doc_page"}
    for lang, tag, body in _blocks():
        if lang == "python" and tag != "no-run":
            exec(compile(body, str(DOC), "exec"), namespace)
        elif lang == "bash":
            _run_shell(body, tmp_path)
    (result,) = (tmp_path / "results" / "concrete" / "mine").glob("*/seed-0/result.json")
    record = json.loads(result.read_text())
    assert record["external"]["form"] == "split" and record["status"] == "ok"
    assert record["task_hash"] == namespace["task"].task_hash  # export, score, load agree
