"""After ``sphinx-build`` (``make docs``): the search index and the page sources the site serves
(``_sources/*.txt``) hold no HTML entities, which the search page would print as written
(``&#x27;``, ``&lt;``). Usage: ``python docs/check_search_text.py docs/_build/html``."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ENTITY = re.compile(r"&(#x?[0-9a-fA-F]+|lt|gt|amp|quot|apos|nbsp);")


def problems(html: Path) -> list[str]:
    files = [html / "searchindex.js", *sorted((html / "_sources").rglob("*.txt"))]
    found = []
    for path in files:
        text = path.read_text()
        for match in ENTITY.finditer(text):
            context = text[max(0, match.start() - 40) : match.end() + 20]
            found.append(f"{path.relative_to(html)}: {match.group(0)} in {context!r}")
    return found


if __name__ == "__main__":
    found = problems(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/_build/html"))
    for line in found:
        print(line, file=sys.stderr)
    sys.exit(1 if found else 0)
