"""What keeps the HTML report from running anything it did not write itself.

Every string a report shows comes from somewhere a reader does not control (a preset, a
config value, a plugin, a record, a baseline), so the pages never pass one through as
markup (docs/running.md, "The HTML report"):

- :func:`markdown_html`: a section's Markdown as HTML with raw HTML escaped (shown as
  text, never parsed) and every link or image address that names a scheme other than
  http or https dropped (``javascript:`` among them, however it is spelt);
- :func:`json_script`: data embedded as a ``<script type="application/json">`` block
  with ``<``, ``>``, ``&`` and the line separators written as JSON escapes, so no value
  can end the block or open a comment inside it;
- :data:`CSP`: each page's content-security policy, the second line of defence: scripts
  only from the report's own files (no inline script anywhere), no plugins, no forms.
"""

from __future__ import annotations

import json
import re
from typing import Any

CSP = (
    "default-src 'none'; script-src 'self' file:; style-src 'self' 'unsafe-inline' file:; "
    "img-src 'self' file: data:; font-src 'self' file: data:; connect-src 'self' file:; "
    "object-src 'none'; base-uri 'none'; form-action 'none'"
)
# ASCII whitespace and control characters, which browsers drop from a URL before reading
# its scheme ("java\tscript:" is javascript:).
_IGNORED = re.compile(r"[\x00-\x20\x7f]+")
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*):")
_JSON_ESCAPES = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}


def safe_url(url: str) -> bool:
    """Whether a link or image address may stay: relative, or http(s)."""
    scheme = _SCHEME.match(_IGNORED.sub("", url))
    return scheme is None or scheme.group(1).lower() in ("http", "https")


def markdown_html(text: str) -> str:
    """``text`` (Markdown with tables) as HTML; raw HTML in it is escaped, unsafe link and
    image addresses are removed (the link text stays)."""
    import markdown
    from markdown.extensions import Extension
    from markdown.treeprocessors import Treeprocessor

    class DropUnsafeUrls(Treeprocessor):
        def run(self, root):
            for element in root.iter():
                for attribute in ("href", "src"):
                    value = element.get(attribute)
                    if value is not None and not safe_url(value):
                        del element.attrib[attribute]

    class EscapeHtml(Extension):
        def extendMarkdown(self, md):
            md.preprocessors.deregister("html_block")
            md.inlinePatterns.deregister("html")
            md.treeprocessors.register(DropUnsafeUrls(md), "drop_unsafe_urls", 0)

    return markdown.markdown(text, extensions=["tables", EscapeHtml()], output_format="html")


def json_script(element_id: str, data: Any, **attributes: str) -> str:
    """``data`` as a JSON data block ``<script type="application/json" id=...>``; the
    browser never runs it, and nothing in it can close it (see module doc)."""
    from html import escape

    text = json.dumps(data, separators=(",", ":"))
    for char, code in _JSON_ESCAPES.items():
        text = text.replace(char, code)
    extra = "".join(
        f' {k.replace("_", "-")}="{escape(v, quote=True)}"' for k, v in attributes.items()
    )
    return (
        f'<script type="application/json" id="{escape(element_id, quote=True)}"{extra}>'
        f"{text}</script>\n"
    )
