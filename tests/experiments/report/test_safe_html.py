"""The report never passes a string through as markup (experiments/report/safe.py): the
parsed HTML of a section or a data block, read back with the standard library's parser,
holds no element, attribute or address the text did not ask for as Markdown."""

from __future__ import annotations

import json
from html.parser import HTMLParser

import pytest

from udora.experiments.report.safe import CSP, json_script, markdown_html, safe_url

HOSTILE = (
    "<img src=x onerror=alert(1)>",
    "<script>alert(2)</script>",
    "<!--<script>",
    "</script><script>alert(3)</script>",
    '"><svg onload=alert(4)>',
    "<a href='javascript:alert(5)'>x</a>",
)


class Elements(HTMLParser):
    """Every start tag and its attributes, and the text of script elements."""

    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts.append(data)


def parsed(html: str) -> Elements:
    found = Elements()
    found.feed(html)
    found.close()
    return found


@pytest.mark.parametrize("value", HOSTILE)
def test_markdown_shows_raw_html_as_text(value):
    text = f"## Section\n\n| config | rho |\n|---|---|\n| nn[label={value}] | 0.5 |\n\n{value}\n"
    found = parsed(markdown_html(text))
    tags = {tag for tag, _ in found.tags}
    assert tags <= {"h2", "table", "thead", "tbody", "tr", "th", "td", "p"}, tags
    assert all(not attrs for _, attrs in found.tags)  # no attribute at all was made
    assert value in markdown_html(text).replace("&lt;", "<").replace("&gt;", ">").replace(
        "&quot;", '"'
    ).replace("&amp;", "&")  # shown, as text


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        "JaVaScRiPt:alert(1)",
        " javascript:alert(1)",
        "java\tscript:alert(1)",
        "java\nscript:alert(1)",
        "data:text/html;base64,PHNjcmlwdD4=",
        "vbscript:x",
    ],
)
def test_links_and_images_to_other_schemes_are_dropped(url):
    html = markdown_html(f"[a link]({url}) and ![an image]({url})")
    for tag, attrs in parsed(html).tags:
        assert "href" not in attrs and "src" not in attrs, (tag, attrs)
    assert "a link" in html
    assert not safe_url(url)


@pytest.mark.parametrize("url", ["method-x.html", "risk_coverage_p.png", "https://a.b/c", "#x"])
def test_the_reports_own_addresses_stay(url):
    html = markdown_html(f"[a]({url}) ![b]({url})")
    attrs = {tag: a for tag, a in parsed(html).tags}
    assert attrs == {"p": {}, "a": {"href": url}, "img": {"alt": "b", "src": url}}


@pytest.mark.parametrize("value", HOSTILE)
def test_a_data_block_holds_its_value_and_nothing_else(value):
    data = {"preset": value, "rows": [value, 1.5]}
    html = f"<p>before</p>{json_script('d', data)}<p>after</p>"
    found = parsed(html)
    assert [tag for tag, _ in found.tags] == ["p", "script", "p"]  # the block ends where made
    assert found.tags[1][1] == {"type": "application/json", "id": "d"}
    assert json.loads(found.scripts[0]) == data
    assert "<" not in found.scripts[0] and ">" not in found.scripts[0]


def test_the_policy_runs_no_inline_script_and_loads_nothing_elsewhere():
    directives = dict(d.strip().split(" ", 1) for d in CSP.split(";"))
    assert "'unsafe-inline'" not in directives["script-src"]
    assert "'unsafe-eval'" not in directives["script-src"]
    assert directives["default-src"] == "'none'" and directives["object-src"] == "'none'"
    assert "http" not in CSP and "*" not in CSP
