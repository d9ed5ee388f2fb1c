"""Run folders of an older udora: found, explained, kept, never reused or reported.

udora 0.1.0 wrote ``result.json`` without a ``schema`` field, under config hashes of the
whole preset and with another task standardisation, so its runs are neither comparable
with nor found under the 0.2.0 folders (docs/running.md). Bench and report leave them
untouched and say how many there are.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SCHEMA = 2  # result.json layout written since udora 0.2.0 (0.1.0 wrote no "schema")
RESULT_GLOB = "*/*/*/seed-*/result.json"


def is_current(record: dict[str, Any] | None) -> bool:
    """Whether a result.json record has this layout (``"schema": 2``, udora 0.2.0 and on)."""
    return isinstance(record, dict) and record.get("schema") == SCHEMA


def is_legacy(record: Any) -> bool:
    """Whether a result.json record is udora 0.1.0's: an object with no ``schema`` at all
    (one with another ``schema`` is a damaged record, rerun like any, never "old")."""
    return isinstance(record, dict) and "schema" not in record


def read_record(path: Path) -> dict[str, Any] | None:
    """A result.json file as a dict, or None when unreadable (also not UTF-8, not JSON)."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        return None


def legacy_results(results_dir: str | Path) -> list[Path]:
    """The result.json files under ``results_dir`` written by udora 0.1.0 (no schema 2)."""
    out = []
    for path in sorted(Path(results_dir).glob(RESULT_GLOB)):
        record = read_record(path)
        if is_legacy(record):
            out.append(path)
    return out


def legacy_note(results_dir: str | Path, count: int) -> str:
    """The one line that explains ``count`` old runs under ``results_dir``."""
    return (
        f"{count} run{'s' if count != 1 else ''} in {results_dir} "
        f"{'were' if count != 1 else 'was'} written by udora 0.1.0 (old config hashes and "
        "task standardisation); they are kept but not reused — see CHANGELOG.md 0.2.0"
    )
