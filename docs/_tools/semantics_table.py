"""The privacy–utility map's semantics table, as Markdown, read from the rows the map's report uses
(privbandits.papers.privacy_map.semantics.SEMANTICS) when the site is built: what each privacy model's
parameter means, whom it protects from whom, over what span, and whom it trusts."""

from __future__ import annotations

from dataclasses import fields


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def semantics_markdown() -> str:
    """One row per privacy model of the map, in the report's order."""
    from privbandits.papers.privacy_map.semantics import SEMANTICS, Semantics

    names = [field.name for field in fields(Semantics)]
    header = "| " + " | ".join(name.replace("_", " ") for name in names) + " |"
    rows = ["| " + " | ".join(_cell(getattr(row, name)) for name in names) + " |" for row in SEMANTICS.values()]
    return "\n".join([header, "|" + "---|" * len(names), *rows])
