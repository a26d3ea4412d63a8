"""The prose of a Markdown page, as the docs checks read it: generated blocks and fenced code blanked."""

from __future__ import annotations

import re

from privbandits.experiments.marked_blocks import block_pattern

GENERATED_TAGS = ("results", "requirements")
"""Marked blocks (:mod:`privbandits.experiments.marked_blocks`) whose bodies are generated or checked against
generated files; the rest of a Markdown file is prose."""
_FENCED = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def _blank(block: re.Match) -> str:
    return "\n" * block.group(0).count("\n")


def prose(markdown: str) -> str:
    """``markdown`` with the bodies of its generated blocks and its fenced code blanked (code is run, not read: a
    format such as ``{name:30s}`` is no timing), their lines kept, so line numbers hold."""
    for tag in GENERATED_TAGS:
        markdown = block_pattern(tag, r"[^>]*?").sub(_blank, markdown)
    return _FENCED.sub(_blank, markdown)
