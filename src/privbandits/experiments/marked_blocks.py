"""Marked blocks of a Markdown file: ``<!-- TAG ARGUMENT -->`` … ``<!-- /TAG -->``.

The README quotes results in ``results`` blocks (checked against the results book, :mod:`.book`) and shows
the input-requirement tables in ``requirements`` blocks (written from the declarations,
:mod:`.requirements`); both find their blocks here.
"""

from __future__ import annotations

import re
from collections.abc import Callable

NAME = r"[\w./-]+"
"""What a block's argument is unless a caller says otherwise: one name."""


def block_pattern(tag: str, argument: str = NAME) -> re.Pattern[str]:
    """The blocks of ``tag``: group 1 the argument, group 2 the body."""
    return re.compile(rf"<!-- {tag} ({argument}) -->(.*?)<!-- /{tag} -->", re.DOTALL)


def fill_blocks(text: str, tag: str, body: Callable[[str], str]) -> str:
    """``text`` with the body of every ``tag`` block replaced by ``body(argument)`` (on lines of its own)."""

    def filled(match: re.Match[str]) -> str:
        return f"<!-- {tag} {match.group(1)} -->\n{body(match.group(1)).strip()}\n<!-- /{tag} -->"

    return block_pattern(tag).sub(filled, text)
