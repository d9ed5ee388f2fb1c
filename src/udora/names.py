"""The one rule for names that become path parts, and the check that a path stays inside
the folder a command was given.

Preset, method, plugin and study names, config hashes and seeds are folder and file names
under a results folder (``<preset>/<method>/<hash>/seed-<s>``), a tuned folder
(``<preset>/<method>.yaml``) or an export. A name is 1 to 64 characters of letters,
digits, ``_``, ``-`` and ``.``, starting with a letter or digit (:data:`NAME`): no path
separator, no ``..``, no leading dot, nothing a shell or a browser reads specially.
:func:`inside` resolves a path (symbolic links included) and refuses it unless it lies
in the given folder, so a link planted inside a results folder cannot lead a write out.
"""

from __future__ import annotations

import re
from pathlib import Path

from udora.errors import UserError

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
RULE = "1-64 letters, digits, '_', '-' or '.', starting with a letter or digit"


def check_name(value: object, what: str) -> str:
    """``value`` if it is a name (:data:`NAME`), else a :class:`UserError` naming ``what``
    (e.g. "preset name") and the rule."""
    if not isinstance(value, str) or NAME.fullmatch(value) is None:
        raise UserError(f"{what} {value!r} is not a valid name: expected {RULE}")
    return value


def inside(root: str | Path, path: str | Path) -> Path:
    """``path`` resolved, which must lie in ``root`` resolved (both may not exist yet;
    links are followed as far as they exist). Raises :class:`UserError` naming both."""
    base = Path(root).resolve()
    target = Path(path).resolve()
    if target != base and base not in target.parents:
        raise UserError(
            f"{path} resolves to {target}, outside the folder {root} ({base}); udora writes "
            "only inside the folder it was given (is a symbolic link there?)"
        )
    return target
