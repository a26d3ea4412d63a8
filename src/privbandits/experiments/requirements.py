"""The docs' input-requirement tables, written from the options the classes declare (issue 32).

Each ``<!-- requirements SECTION -->`` … ``<!-- /requirements -->`` block of ``docs/requirements.md`` holds the table
of :data:`SECTIONS`' classes' declared options (:mod:`privbandits.options`): every option, what it must be
(the constraint's own phrase, the one its refusal quotes), its default and what it is. Rules that tie
options together and each call's arguments stay in the prose around the blocks.
``make declarations`` (``python -m privbandits.experiments.requirements docs/requirements.md``) rewrites the
blocks; ``tests/project/test_readme_requirements.py`` fails while the page differs from what it would write.
"""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path

from privbandits.experiments.marked_blocks import fill_blocks
from privbandits.options import Option, options_of

TAG = "requirements"


def _sections() -> dict[str, tuple[type, ...]]:
    """The classes behind each block, by the block's argument (imported only when a table is written)."""
    from privbandits.linear.policies import EpsilonGreedy, LinTS, LinUCB, UniformRandom
    from privbandits.linear.ridge import RidgeStatistics
    from privbandits.protocols.dp import PrivateLinUCB, ShuffleDPLinUCB
    from privbandits.protocols.fclub.baselines import BaselineConfig
    from privbandits.protocols.fclub.config import FCLUBConfig
    from privbandits.protocols.mpc_bandit.config import MPCBanditConfig
    from privbandits.protocols.p2b.config import P2BConfig
    from privbandits.protocols.vertical.core import VerticalFederatedBandit

    return {
        "linear": (LinUCB, LinTS, EpsilonGreedy, UniformRandom, RidgeStatistics),
        "p2b": (P2BConfig,),
        "vertical": (VerticalFederatedBandit,),
        "fclub": (FCLUBConfig, BaselineConfig),
        "mpc": (MPCBanditConfig,),
        "dp": (PrivateLinUCB, ShuffleDPLinUCB),
    }


def _code(value: object) -> str:
    if isinstance(value, Enum):
        value = value.value
    return f"`{value!r}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _row(name: str, declared: Option, owners: list[str], with_owners: bool) -> str:
    default = "required" if declared.required else _code(declared.default)
    cells = [f"`{name}`", *([", ".join(owners)] if with_owners else []), str(declared.constraint), default]
    return "| " + " | ".join(_cell(cell) for cell in [*cells, declared.doc]) + " |"


def table(classes: tuple[type, ...]) -> str:
    """One row per option; an option declared alike by several classes is one row naming them all."""
    rows: dict[tuple[str, str, str, str], list[str]] = {}
    declarations: dict[tuple[str, str, str, str], Option] = {}
    for cls in classes:
        for name, declared in options_of(cls).items():
            key = (name, str(declared.constraint), repr(declared.default), declared.doc)
            rows.setdefault(key, []).append(cls.__name__)
            declarations[key] = declared
    with_owners = len(classes) > 1
    header = ["option", *(["of"] if with_owners else []), "must be", "default", "what it is"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += [_row(key[0], declarations[key], owners, with_owners) for key, owners in rows.items()]
    return "\n".join(lines)


def section_table(section: str) -> str:
    """The table of one requirements block."""
    sections = _sections()
    if section not in sections:
        raise ValueError(f"<!-- {TAG} {section} -->: unknown section; known: {', '.join(sections)}")
    return table(sections[section])


def write_tables(text: str) -> str:
    """``text`` (a Markdown page) with every requirements block rewritten from the declarations."""
    return fill_blocks(text, TAG, section_table)


def main(argv: list[str]) -> int:
    """Rewrite the requirements blocks of each named Markdown file in place."""
    for name in argv or ["docs/requirements.md"]:
        path = Path(name)
        text = path.read_text(encoding="utf-8")
        written = write_tables(text)
        if written != text:
            path.write_text(written, encoding="utf-8")
            print(f"rewrote the requirements tables of {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
