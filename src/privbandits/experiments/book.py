"""The results book: every stored reproduction's report in one Markdown file, and the README's check.

``privbandits report --book docs/results.md`` rebuilds each reproduction from the store
(with the options it was last run with) and writes one section per reproduction: the
command that reruns it, then its report (claims, tables, notes; figures are left out, they
live beside the per-reproduction reports). The README quotes numbers from this file inside
marked blocks::

    <!-- results vertical-fig4 -->
    ... 104.38 ± 14.87 ...
    <!-- /results -->

and :func:`unbacked_numbers` lists every decimal number, and every whole number of three or more digits, of
such a block that the book's section for that reproduction does not contain, thousands commas aside
(``tests/project/test_readme.py`` asserts none).

A reproduction's section shows the options it was last run with. ``--also "NAME -o KEY=VALUE"``
adds a section for other stored options of it (e.g. ``mpc-fig2 -o data=fashion`` beside the
default data); a README block names such a section by its whole command,
``<!-- results mpc-fig2 -o data=fashion -->``, and a bare name means the reproduction's first section.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from privbandits.experiments.marked_blocks import block_pattern

_BLOCK = block_pattern("results", r"[\w./-]+(?: -o [\w.=,-]+)*")
_DECIMAL = re.compile(r"(?<![\w.])\d[\d,]*\.\d+")
_WHOLE = re.compile(r"(?<![\w.,])(?:\d{1,3}(?:,\d{3})+|\d{3,})(?![\w,]|\.\d)")
"""A whole number of three or more digits (``4,000``, ``1960``): counts, totals, bytes."""
_GROUPING = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")


def _ungrouped(text: str) -> str:
    """``text`` with the thousands commas of its numbers removed (the book writes 1960 where prose writes 1,960)."""
    return _GROUPING.sub("", text)


_SECTION = re.compile(r"^## `privbandits (?:run )?([^`]+)`", re.MULTILINE)


def _option_text(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list | tuple):
        return ",".join(_option_text(item) for item in value)
    return "none" if value is None else str(value)  # paths, numbers, and points such as DxK by their str


def _changed(key: str, default: Any, value: Any) -> dict[str, str]:
    """Dotted keys (``environment.dim``, ``policies.0.alpha``) of what differs between two values."""
    if isinstance(value, BaseModel) and type(default) is type(value):
        return {
            name: text
            for field in type(value).model_fields
            for name, text in _changed(f"{key}.{field}", getattr(default, field), getattr(value, field)).items()
        }
    nested = isinstance(value, list | tuple) and value and all(isinstance(item, BaseModel) for item in value)
    if nested and isinstance(default, list | tuple) and len(default) == len(value):
        return {
            name: text
            for index, (old, new) in enumerate(zip(default, value, strict=True))
            for name, text in _changed(f"{key}.{index}", old, new).items()
        }
    return {} if _same(default, value) else {key: _option_text(value)}


def _same(default: Any, value: Any) -> bool:
    """Equal, or two paths to the same file (a folder reached through a link is the default folder)."""
    if isinstance(default, Path) and isinstance(value, Path):
        return default.resolve() == value.resolve()
    return default == value


def changed_options(reproduction, options: BaseModel) -> dict[str, str]:
    """The options that differ from the reproduction's defaults, as ``-o`` keys and values."""
    if getattr(reproduction, "path", True) is None:  # a config known only from the store: no defaults
        return {}
    return {key.removeprefix("."): text for key, text in _changed("", reproduction.parse({}), options).items()}


def _target(reproduction) -> str:
    """What ``privbandits run`` takes for it: the name, or the file of a config not shipped by name."""
    from privbandits.experiments.catalog import shipped_configs

    path = getattr(reproduction, "path", None)
    if path is None or reproduction.name in shipped_configs():
        return reproduction.name
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def rerun_command(reproduction, options: BaseModel) -> str:
    """``privbandits run NAME -o KEY=VALUE ...``: the command that gives this section's numbers."""
    from privbandits.experiments.reproduction import Options

    changed = changed_options(reproduction, options)
    shown = options.shown_options(changed) if isinstance(options, Options) else changed
    parts = [f"privbandits run {_target(reproduction)}"]
    parts += [f"-o {key}={value}" for key, value in shown.items()]
    return " ".join(parts)


def _without_figures(markdown: str) -> str:
    return re.sub(r"\n## Figures\n\n(?:!\[.*\]\(.*\)\n)+", "\n", markdown)


def section(reproduction, options: BaseModel, paper) -> str:
    """One reproduction's part of the book: a heading with its rerun command, then its report."""
    return headed_section(rerun_command(reproduction, options), _without_figures(paper.markdown()))


def headed_section(command: str, markdown: str) -> str:
    """A part of the book: ``command`` (what reruns it) as its heading, then ``markdown`` two levels down."""
    body = re.sub(r"^# ", "### ", markdown.replace("\n# ", "\n### ").replace("\n## ", "\n#### "))
    return f"## `{command}`\n\n{body}"


def parse_also(text: str) -> tuple[str, list[str]]:
    """``"NAME -o KEY=VALUE -o …"`` (an ``--also`` value) as the name and its ``KEY=VALUE`` options."""
    words = text.split()
    pairs = words[1:]
    flags, options = pairs[::2], pairs[1::2]
    if not words or len(pairs) % 2 or any(flag != "-o" for flag in flags) or any("=" not in o for o in options):
        raise ValueError(f"--also: expected 'NAME -o KEY=VALUE [-o KEY=VALUE ...]', got {text!r}")
    return words[0], options


def write_book(sections: list[str], path: Path, also: list[str] | tuple[str, ...] = ()) -> Path:
    """The book: a preamble naming the command that wrote it, then the sections in the given order (atomically);
    a section given twice (an ``--also`` for the options a reproduction was last run with) is written once."""
    from privbandits.experiments.paper import atomic_path

    command = " ".join(["privbandits report --book docs/results.md", *(f'--also "{text}"' for text in also)])
    preamble = (
        "# Results\n\n"
        f"Generated by `{command}` from the results store; every "
        "section starts with the command that reruns it. Timings depend on the machine; every "
        "other number is fixed by the seeds.\n"
    )
    with atomic_path(path) as partial:
        partial.write_text("\n".join([preamble, *dict.fromkeys(sections)]))
    return path


def book_sections(book: str) -> dict[str, str]:
    """``{rerun command after 'privbandits run ' (or 'privbandits ': ``audit``): its section's text}`` of a book, in
    the book's order."""
    return headed_sections(book, _SECTION)


def headed_sections(text: str, heading: re.Pattern[str]) -> dict[str, str]:
    """``{heading's first group: the text from that heading to the next}`` for every match of ``heading``."""
    starts = [(match.group(1), match.start()) for match in heading.finditer(text)]
    ends = [start for _, start in starts[1:]] + [len(text)]
    return {key: text[start:end] for (key, start), end in zip(starts, ends, strict=True)}


def _section_of(sections: dict[str, str], name: str) -> str | None:
    """The section a README block names: by its whole command, else a bare name's first section."""
    if name in sections:
        return sections[name]
    if " " in name:
        return None
    return next((text for command, text in sections.items() if command.split()[0] == name), None)


def unbacked_numbers(readme: str, book: str) -> list[str]:
    """Each number (decimal, or whole of three or more digits) quoted in a results block that its book section
    lacks, thousands commas aside."""
    sections = book_sections(book)
    problems = []
    for name, block in _BLOCK.findall(readme):
        text = _section_of(sections, name)
        if text is None:
            problems.append(f"{name}: no section in the book")
            continue
        plain = _ungrouped(text)
        numbers = _DECIMAL.findall(block) + _WHOLE.findall(block)
        problems += [f"{name}: {number}" for number in numbers if _ungrouped(number) not in plain]
    return problems
