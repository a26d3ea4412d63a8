"""No docstring, README line or docs page states a timing or size that goes stale (issue 33, item 4).

Measured numbers (µs a round, KB a message, rounds/s, "3× faster") change with the code and the machine, so
they live in generated pages (``docs/results.md``, the ``<!-- results … -->`` blocks the book checks, the
benchmarks' output), never in prose. This test parses every module under ``src/privbandits`` with :mod:`ast` and
reads every string-expression statement (module, class, function and attribute docstrings), and reads README.md
and the docs' Markdown outside their generated blocks, for a number followed by a unit of time, size or speed.

A number that is not a measurement (a protocol constant, a limit the code enforces, a default, a number quoted
from a paper) is better written so that it does not match (name the constant); where the number itself is the
point it goes in :data:`ALLOWED`, with the exact phrase and the reason. A parameter's value written as one
("default 30 s", "= 5 s", "a 10 s deadline") is not flagged.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from markdown_prose import prose
from project_paths import ROOT

SRC = ROOT / "src" / "privbandits"
README = ROOT / "README.md"
DOCS = ROOT / "docs"
GENERATED_PAGES = ("results.md", "benchmark-runs.md")
"""Docs pages written whole by a command (``privbandits report --book``): every number in them is generated."""

_PLAIN = r"\d+(?:[,_]\d{3})*(?:\.\d+)?(?:\s*·\s*10\^\d+|e[+-]?\d+)?"
NUMBER = rf"(?<![\w.^·/]){_PLAIN}(?:\s*(?:–|-|to)\s*{_PLAIN})?"
UNIT = (
    r"(?:[µμun]s|ms|s|sec|seconds?|min|minutes?|hours?"  # time
    r"|[kKMGT]i?B|B|bytes?"  # size
    r"|[A-Za-z]+/s|per\s+second)"  # speed
)
RATIO = r"(?:[x×](?:\s+(?:faster|slower|more|less|fewer|cheaper))?|\s?%\s+(?:faster|slower|more|less|fewer|cheaper))"
"""``3× faster``, ``1.31×``, ``4x more``, ``20% faster`` (the × against the number: ``2 × deadline_s`` is a formula)."""
STALE = re.compile(rf"{NUMBER}(?:\s?-?{UNIT}|{RATIO})(?![\w/(·^])(?!\s*\d)")
"""A number with a unit of time, size or speed, or a ratio; not a product (``100 × 500``, ``2x·c``)."""
PARAMETER = re.compile(r"(?:\bdefaults?(?: (?:is|of|to))?|=|≤)\s*$|^\s+(?:deadline|timeout|target)\b")
"""Text just before (``default 30 s``, ``= 5 s``, ``≤ 0.1 ms``) or after (``10 s deadline``, ``the 3× target``) a
match that makes it a parameter's value or a bound, not a measurement."""

ALLOWED: tuple[tuple[str, str, str], ...] = (
    ("src/privbandits/comm/tls/link.py", "one record, 16 KiB)", "TLS 1.3's largest record (RFC 8446, 5.1)"),
    ("src/privbandits/protocols/p2b/core.py", "No payload (0 bytes)", "an empty message, by definition"),
    ("src/privbandits/papers/mpc/reference.py", "'nearly 500x slower'", "the MPC paper's number (§6), quoted"),
    ("src/privbandits/papers/mpc/table1.py", "the paper's '500x' remark", "the MPC paper's number (§6), quoted"),
    ("src/privbandits/papers/vertical/reference.py", "starts above 5x LinTS", "the vertical paper's Fig. 5(b)"),
    ("src/privbandits/papers/vertical/reference.py", "falls to about 1x", "the vertical paper's Fig. 5(b)"),
    ("src/privbandits/papers/vertical/fig5.py", "formula gives 0.04 GB", "the vertical paper's formula at (d, K)"),
    ("src/privbandits/papers/vertical/fig5.py", "but not 6.25 GB", "the vertical paper's Fig. 5 number"),
    ("src/privbandits/papers/vertical/fig5.py", "the paper's 6.25 GB point", "the vertical paper's Fig. 5 number"),
)
"""(file, exact phrase around the number, why it is not a measurement that goes stale)."""
MARKDOWN_ALLOWED: tuple[tuple[str, str, str], ...] = (
    ("docs/deploy.md", "after 50 ms", "the batch window a test configures (batch_window_s = 0.05)"),
    ("docs/deploy.md", "the rest 5 s after", "deploy local's grace (GRACE_S), a setting"),
    ("docs/deploy.md", "+ 20 ms per early user", "the deadline rule's constant (PER_REPORT_S), a setting"),
    ("docs/deploy.md", "each within 5 s", "the gate's handshake deadline, a setting"),
    ("docs/protocols/mpc.md", "≈ 500× with CrypTen", "the MPC paper's number (§6), quoted"),
)
"""As :data:`ALLOWED`, for README.md and docs/: settings and numbers quoted from the papers, never measurements."""


@dataclass(frozen=True)
class Hit:
    """One number with a unit in one text: its file and line, the matched phrase, and where it sits in the text."""

    path: str
    line: int
    phrase: str
    text: str
    start: int

    def __str__(self) -> str:
        around = " ".join(self.text[max(self.start - 40, 0) : self.start + len(self.phrase) + 30].split())
        return f"{self.path}:{self.line}: {self.phrase!r} in “…{around}…”"

    def covered_by(self, entries: tuple[tuple[str, str, str], ...]) -> bool:
        """Whether an entry for this file has a phrase whose occurrence in the text (any run of white space for
        each space: a docstring breaks lines anywhere) spans this number."""
        end = self.start + len(self.phrase)
        for path, phrase, _ in entries:
            if path == self.path:
                for found in re.finditer(r"\s+".join(map(re.escape, phrase.split())), self.text):
                    if found.start() <= self.start and end <= found.end():
                        return True
        return False


def stale_numbers(path: str, text: str, first_line: int = 1) -> Iterator[Hit]:
    """Every number with a unit of time, size, speed or ratio in ``text`` (which starts at ``first_line``)."""
    for match in STALE.finditer(text):
        before = text[text.rfind("\n", 0, match.start()) + 1 : match.start()]
        if PARAMETER.search(before) or PARAMETER.match(text[match.end() : match.end() + 20]):
            continue
        line = first_line + text.count("\n", 0, match.start())
        yield Hit(path, line, match.group(0), text, match.start())


def docstring_hits(path: str, source: str) -> Iterator[Hit]:
    """:func:`stale_numbers` of every string-expression statement of a module (its docstrings)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            yield from stale_numbers(path, node.value.value, node.lineno)




def _relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


@functools.cache  # two tests read them: parsing every module of src/ once takes a second
def _source_hits() -> tuple[Hit, ...]:
    return tuple(
        hit
        for module in sorted(SRC.rglob("*.py"))
        for hit in docstring_hits(_relative(module), module.read_text(encoding="utf-8"))
    )


def _markdown_files() -> list[Path]:
    pages = sorted(page for page in DOCS.rglob("*.md") if page.relative_to(DOCS).as_posix() not in GENERATED_PAGES)
    return [README, *pages]


def _markdown_hits(page: Path) -> list[Hit]:
    return list(stale_numbers(_relative(page), prose(page.read_text(encoding="utf-8"))))


def test_no_docstring_states_a_measured_timing_or_size():
    stale = [hit for hit in _source_hits() if not hit.covered_by(ALLOWED)]
    assert not stale, "timings or sizes in docstrings (move them to a benchmark or generated page):\n" + "\n".join(
        map(str, stale)
    )


def test_fenced_code_is_not_prose_but_the_text_around_it_is():
    page = "A round took 218–237 µs.\n```python\nprint(f\"{name:30s}\")\n```\nThen 3 ms.\n"
    assert [(hit.line, hit.phrase) for hit in stale_numbers("page.md", prose(page))] == [(1, "218–237 µs"), (5, "3 ms")]


@pytest.mark.parametrize("page", _markdown_files(), ids=_relative)
def test_no_readme_or_docs_prose_states_a_timing_or_size(page):
    stale = [hit for hit in _markdown_hits(page) if not hit.covered_by(MARKDOWN_ALLOWED)]
    assert not stale, "timings or sizes outside generated blocks:\n" + "\n".join(map(str, stale))


def test_every_exemption_is_used_and_says_why():
    hits = _source_hits()
    for entry in ALLOWED:
        assert entry[2].strip(), entry
        assert any(hit.covered_by((entry,)) for hit in hits), f"no longer matches anything: {entry}"
    markdown = [hit for page in _markdown_files() for hit in _markdown_hits(page)]
    for entry in MARKDOWN_ALLOWED:
        assert entry[2].strip() and any(hit.covered_by((entry,)) for hit in markdown), entry


MODULE = '''"""A module."""

SPEED = 1
"""One round takes 218–237 µs a round here."""


def f(deadline_s=10.0):
    """Waits ``deadline_s`` (default 10 s, a 10 s deadline = 10 s); a d = 1000 block is 8 MB."""
'''


def test_the_check_names_file_line_and_phrase_of_a_measured_timing():
    hits = list(docstring_hits("src/privbandits/x.py", MODULE))
    assert [(hit.line, hit.phrase) for hit in hits] == [(4, "218–237 µs"), (8, "8 MB")]
    assert str(hits[0]) == "src/privbandits/x.py:4: '218–237 µs' in “…One round takes 218–237 µs a round here.…”"
    allowed = (("src/privbandits/x.py", "block is 8 MB", "a size computed from d"),)
    assert [hit.phrase for hit in hits if not hit.covered_by(allowed)] == ["218–237 µs"]
    assert [hit.phrase for hit in hits if not hit.covered_by((("src/privbandits/y.py", *allowed[0][1:]),))] == [
        "218–237 µs",
        "8 MB",
    ]  # an entry is for its file only


@pytest.mark.parametrize(
    ("text", "phrases"),
    [
        ("137 KB a learner round instead of 197 KB", ["137 KB", "197 KB"]),
        ("0.35 s of CPU; 1.6 min with 3.2 GiB; 3 min 20 s", ["0.35 s", "1.6 min", "3.2 GiB", "20 s"]),
        ("66,400 users/s, 12 rounds/s, 4·10^5 per second", ["66,400 users/s", "12 rounds/s", "4·10^5 per second"]),
        ("2–8× faster; 1.31× the twin; 4x more; ~20% faster", ["2–8× faster", "1.31×", "4x more", "20% faster"]),
        ("201,336 bytes; a 4-byte length; 16 KiB; 1_000 B", ["201,336 bytes", "4-byte", "16 KiB", "1_000 B"]),
        ("a 100 × 500 matrix, Z_2^64, 64-bit words, ‖c‖² − 2x·c, 10 ms_budget, 3 rounds, 95% CI, x_1 s", []),
        ("(default 30 s), timeout = 5 s, a 10 s deadline, defaults to 2 ms, ≤ 2× and ≤ 0.1 ms, the 3× target", []),
        ("waits 2 × `deadline_s` + 20 ms (3 × …)", ["20 ms"]),
    ],
)  # fmt: skip
def test_the_pattern_takes_units_of_time_size_speed_and_ratio_and_leaves_the_rest(text, phrases):
    assert [hit.phrase for hit in stale_numbers("x", text)] == phrases


def test_generated_blocks_are_blanked_and_the_rest_of_a_page_read(tmp_path):
    page = (
        "Intro.\n<!-- results mpc-fig2 -->\n6.2 ms per round\n<!-- /results -->\n"
        "<!-- requirements mpc -->\n| 5 s |\n<!-- /requirements -->\nIt took 7.7 ms.\n"
    )
    assert [(hit.line, hit.phrase) for hit in stale_numbers("p.md", prose(page))] == [(8, "7.7 ms")]
