"""The README's and the docs' Python examples run as written (doctests, in a fresh folder), and every number
they quote from a reproduction is in the generated results book (docs/results.md)."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

from project_paths import ROOT

README = ROOT / "README.md"
DOCS = ROOT / "docs"


def quoting_pages() -> list[Path]:
    """The README and every docs page but the book itself: where results blocks may quote the book."""
    generated = ("results.md", "benchmark-runs.md")
    return [README, *sorted(path for path in DOCS.rglob("*.md") if path.name not in generated)]


def _doctest(path: Path) -> doctest.TestResults:
    return doctest.testfile(
        str(path), module_relative=False, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    )


def test_readme_python_example_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the example writes results/ where it runs
    outcome = _doctest(README)
    assert outcome.attempted >= 5 and outcome.failed == 0
    assert (tmp_path / "results" / "results.sqlite").is_file()


def test_the_experiments_page_python_example_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    outcome = _doctest(DOCS / "experiments.md")
    assert outcome.attempted >= 6 and outcome.failed == 0
    assert (tmp_path / "results" / "results.sqlite").is_file()


BOOK = DOCS / "results.md"


def test_every_number_the_readme_and_the_docs_quote_for_a_reproduction_is_in_the_generated_results():
    from privbandits.experiments.book import unbacked_numbers

    book = BOOK.read_text()
    texts = {path.relative_to(ROOT).as_posix(): path.read_text() for path in quoting_pages()}
    assert "<!-- results vertical-fig4 -->" in texts["README.md"]  # the demo's numbers stay in the README
    assert sum(text.count("<!-- results ") for text in texts.values()) >= 15  # the blocks this check reads are there
    assert {name: unbacked_numbers(text, book) for name, text in texts.items()} == {name: [] for name in texts}


def test_the_check_flags_a_number_the_results_lack_and_a_missing_section():
    from privbandits.experiments.book import unbacked_numbers

    book = "# Results\n\n## `privbandits run demo -o seeds=0,1`\n\n| a | 104.38 ± 14.87 |\n"
    good = "<!-- results demo -->\nregret 104.38 ± 14.87 over 2 seeds\n<!-- /results -->"
    assert unbacked_numbers(good, book) == []
    assert unbacked_numbers(good.replace("104.38", "104.39"), book) == ["demo: 104.39"]
    assert unbacked_numbers(good.replace("demo", "other"), book) == ["other: no section in the book"]
    counted = book.replace("|\n", "| 1960 of 4000 |\n")
    assert unbacked_numbers(good.replace("over 2", "1,960 of 4,000, over 2"), counted) == []  # commas aside
    assert unbacked_numbers(good.replace("over 2", "1,961 of 4,000, over 2"), counted) == ["demo: 1,961"]


def test_the_book_rebuilds_from_the_store_with_the_rerun_command(tmp_path):
    from typer.testing import CliRunner

    from privbandits.cli import app
    from privbandits.experiments.book import book_sections, unbacked_numbers

    store, out, book = tmp_path / "r.sqlite", tmp_path / "out", tmp_path / "results.md"
    options = [
        "-o",
        "time_dims=4",
        "-o",
        "time_arms=3",
        "-o",
        "time_rounds=2",
        "-o",
        "byte_points=10x3",
        "-o",
        "n_parties=2",
    ]
    ran = CliRunner().invoke(app, ["run", "vertical-fig5", *options, "--store", str(store), "--out", str(out)])
    assert ran.exit_code == 0, ran.output
    earlier = " ".join(["vertical-fig5", *options])
    options[options.index("n_parties=2")] = "n_parties=3"  # run again: the store remembers these as the last
    ran = CliRunner().invoke(app, ["run", "vertical-fig5", *options, "--store", str(store), "--out", str(out)])
    assert ran.exit_code == 0, ran.output
    command = ["report", "--store", str(store), "--out", str(out), "--book", str(book), "--also", earlier]
    made = CliRunner().invoke(app, command)
    assert made.exit_code == 0, made.output
    sections = book_sections(book.read_text())
    assert len(sections) == 2 and list(sections)[1] == earlier  # the last run's options first, then --also's
    heading = next(iter(sections.values())).splitlines()[0]
    assert heading.startswith("## `privbandits run vertical-fig5 -o ") and heading.endswith("`")
    assert sorted(heading.strip("`").split(" -o ")[1:]) == sorted(part for part in options if part != "-o")
    assert f'--also "{earlier}"' in book.read_text().split("\n## ")[0]  # the preamble's command rebuilds it
    report = (out / "vertical-fig5-paper.md").read_text()
    claims = report[report.index("| where |") : report.index("\n\n", report.index("| where |"))]
    assert claims in sections[list(sections)[0]] and "![" not in book.read_text()
    block = "<!-- results {} -->\n{}\n<!-- /results -->"
    bytes_row = next(line for line in sections[earlier].splitlines() if line.startswith("|") and "." in line)
    number = re.findall(r"(?<![\w.])\d[\d,]*\.\d+", bytes_row)[0]
    assert unbacked_numbers(block.format(earlier, number), book.read_text()) == []
    bad = CliRunner().invoke(app, [*command[:-1], "vertical-fig5 -o"])
    assert bad.exit_code == 2 and "--also: expected 'NAME -o KEY=VALUE [-o KEY=VALUE ...]'" in bad.output
    alone = CliRunner().invoke(app, ["report", "--store", str(store), "--out", str(out), "--also", earlier])
    assert alone.exit_code == 2 and "--also adds sections to the book: give --book FILE with it" in alone.output
