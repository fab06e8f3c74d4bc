"""Writing a user can scan: no paragraph of the README, the quick start or a guide runs over 10
lines (code blocks and tables do not count; each list item is a paragraph of its own), and the
documentation sources hold no HTML entities, which the site's "show source" pages and search
excerpts would print as written (``&lt;step&gt;``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 10
SCANNED = [
    ROOT / "README.md",
    ROOT / "docs" / "quickstart.md",
    *sorted((ROOT / "docs" / "guides").glob("*.md")),
]
ENTITY = re.compile(r"&(#x?[0-9a-fA-F]+|lt|gt|amp|quot|apos|nbsp);")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,}|:{3,})")
_ITEM = re.compile(r"^\s*([-*+]|\d+[.)])\s")


def paragraphs(text: str) -> list[tuple[int, int]]:
    """(first line, number of lines) of every paragraph of Markdown ``text``: runs of text lines
    between blank lines, headings, fenced or indented code blocks and tables; a list item starts
    a paragraph of its own."""
    found: list[tuple[int, int]] = []
    start, count = 0, 0
    fence: str | None = None
    indented_code = False

    def flush() -> None:
        nonlocal count
        if count:
            found.append((start, count))
        count = 0

    for number, line in enumerate(text.splitlines(), 1):
        if fence:
            if line.strip().startswith(fence):
                fence = None
            continue
        match = _FENCE.match(line)
        if match:
            flush()
            fence = match.group(1)
            continue
        if not line.strip():
            flush()
            continue
        if indented_code and line.startswith("    "):
            continue
        indented_code = False
        if count == 0 and line.startswith("    ") and not _ITEM.match(line):
            indented_code = True  # an indented code block starts after a blank line
            continue
        if line.lstrip().startswith("|") or line.startswith("#") or re.match(r"^\(.+\)=$", line):
            flush()
            continue
        if _ITEM.match(line):
            flush()
        if count == 0:
            start = number
        count += 1
    flush()
    return found


def long_paragraphs(path: Path) -> list[str]:
    return [
        f"{path.relative_to(ROOT)}:{first} ({lines} lines)"
        for first, lines in paragraphs(path.read_text())
        if lines > MAX_LINES
    ]


def test_paragraphs_are_found_outside_code_and_tables():
    text = (
        "# Title\n\none\ntwo\n\n    code\n    code\n\nthree\n| a |\n|---|\nfour\n\n"
        "```\nx\n\ny\n```\n- item\n  more\n- item\n"
    )
    assert paragraphs(text) == [(3, 2), (9, 1), (12, 1), (19, 2), (21, 1)]


@pytest.mark.parametrize("path", SCANNED, ids=lambda path: str(path.relative_to(ROOT)))
def test_no_paragraph_is_over_ten_lines(path):
    assert not long_paragraphs(path), "split these paragraphs, or move their lists into a table"


def test_documentation_sources_hold_no_html_entities():
    sources = [
        ROOT / "README.md",
        ROOT / "CHANGELOG.md",
        *ROOT.glob("recipes/*/README.md"),
        *(
            p
            for p in (ROOT / "docs").rglob("*")
            if p.suffix in {".md", ".rst"} and "_build" not in p.parts
        ),
    ]
    found = [
        f"{path.relative_to(ROOT)}:{number}: {match.group(0)}"
        for path in sources
        for number, line in enumerate(path.read_text().splitlines(), 1)
        for match in ENTITY.finditer(line)
    ]
    assert not found, "write the character (in backquotes where Markdown would read it as HTML)"
