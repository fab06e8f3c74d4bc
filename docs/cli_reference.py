"""The parser that ``docs/cli.rst`` documents: :func:`chemgraph.cli.main.build_parser` with its
texts made into reStructuredText, which sphinx-argparse parses them as.

Only the form changes, never the words: an indented block after a line ending in ``:`` (the
``examples:`` of an epilog) becomes a literal block, and characters that mean something in
reStructuredText (``*``, ``_``, backquotes, ``|``) are escaped elsewhere, so
``datasets/*.yaml`` stays as written.
"""

from __future__ import annotations

import argparse
import re

from chemgraph.cli.main import build_parser

_SPECIAL = re.compile(r"([\\*_`|])")


def _escape(text: str) -> str:
    return _SPECIAL.sub(r"\\\1", text)


def _paragraph(paragraph: str) -> str:
    """One paragraph of a help text: a literal block under its heading line when its other
    lines are indented, else escaped text."""
    head, _, body = paragraph.partition("\n")
    if head.endswith(":") and body and all(line.startswith(" ") for line in body.splitlines()):
        return f"{_escape(head)}:\n\n{body}"
    return _escape(paragraph)


def to_rst(text: str | None) -> str | None:
    """``text`` (a description, epilog or help of the parser) as reStructuredText."""
    if not text:
        return text
    return "\n\n".join(_paragraph(p) for p in re.split(r"\n\s*\n", text.strip("\n")))


def _convert(parser: argparse.ArgumentParser) -> None:
    parser.description = to_rst(parser.description)
    parser.epilog = to_rst(parser.epilog)
    for action in parser._actions:
        if action.help not in (None, argparse.SUPPRESS):
            action.help = to_rst(action.help)
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:  # the sub-commands' one-line help
                choice.help = to_rst(choice.help)
            for subparser in set(action.choices.values()):
                _convert(subparser)


def parser() -> argparse.ArgumentParser:
    """``chemgraph``'s parser, its texts in reStructuredText (module docstring)."""
    result = build_parser()
    _convert(result)
    return result
