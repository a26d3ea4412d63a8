"""The results site: static HTML rebuilt from the store, one page per reproduction and an index.

``privbandits site --out DIR`` reports every reproduction the store holds (with the options
it was last run with), writes its figures and ``DIR/<name>/index.html`` (the rerun command,
the paper-vs-ours claims, the report's tables, figures and notes), and ``DIR/index.html``
listing them with their verdicts. Plain HTML and one local stylesheet: no scripts, fonts or
other resources from outside, so the folder opens from disk and can be copied anywhere.
"""

from __future__ import annotations

import html
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from privbandits.experiments.paper import PaperReport, atomic_path

STYLE = """
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto; max-width: 72rem;
       padding: 1.5rem; color: #1d1f23; background: #fff; }
h1 { font-size: 1.6rem; margin-bottom: .2rem; } h2 { font-size: 1.2rem; margin-top: 2rem; }
code { background: #f2f3f5; padding: .1rem .3rem; border-radius: 3px; font-size: .9em; }
table { border-collapse: collapse; margin: .8rem 0; font-size: .9rem; }
th, td { border: 1px solid #d5d8de; padding: .3rem .55rem; text-align: left; vertical-align: top; }
th { background: #f2f3f5; }
td.verdict-yes { background: #e5f4e8; } td.verdict-no { background: #fbe7e6; } td.verdict-other { background: #fdf5dc; }
img { max-width: 100%; border: 1px solid #e3e5e9; margin: .5rem 0; }
nav { margin-bottom: 1rem; font-size: .9rem; } .muted { color: #5f6670; font-size: .9rem; }
"""


@dataclass(frozen=True)
class SitePage:
    """One reproduction's page: where it lives and what its index row shows."""

    name: str
    title: str
    command: str
    verdicts: Counter
    figures: tuple[str, ...] = ()
    """File names of the page's figures, in report order (inside ``name/``)."""


def verdict_class(verdict: str) -> str:
    """``yes`` for a reproduced claim, ``no`` for one not reproduced, ``other`` for the rest."""
    text = verdict.lower()
    if text.startswith("not ") or "not reproduced" in text:
        return "no"
    return "yes" if text.startswith("reproduced") else "other"


def _cell(text: object, tag: str = "td", css: str | None = None) -> str:
    attribute = f' class="{css}"' if css else ""
    return f"<{tag}{attribute}>{html.escape(str(text))}</{tag}>"


def _table(header: list[str], rows: list[list[str]], verdict_column: int | None = None) -> str:
    head = "".join(_cell(column, "th") for column in header)
    body = []
    for row in rows:
        cells = [
            _cell(value, css=f"verdict-{verdict_class(value)}" if index == verdict_column else None)
            for index, value in enumerate(row)
        ]
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _document(title: str, body: str, stylesheet: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n"
        f'<link rel="stylesheet" href="{stylesheet}">\n</head>\n<body>\n{body}\n</body>\n</html>\n'
    )


def _write(path: Path, text: str) -> Path:
    with atomic_path(path) as partial:
        partial.write_text(text, encoding="utf-8")
    return path


def reproduction_page(paper: PaperReport, command: str, folder: Path) -> SitePage:
    """Write ``folder/index.html`` for a report whose figures were written into ``folder``."""
    parts = [
        '<nav><a href="../index.html">← all results</a></nav>',
        f"<h1>{html.escape(paper.title)}</h1>",
        f'<p class="muted">Rebuilt from the results store; rerun with <code>{html.escape(command)}</code></p>',
    ]
    if paper.claims:
        rows = [[c.where, c.statement, c.paper, c.ours, c.verdict] for c in paper.claims]
        parts += ["<h2>Paper vs ours</h2>", _table(["where", "claim", "paper", "ours", "verdict"], rows, 4)]
    for caption, rows in paper.tables.items():
        parts += [f"<h2>{html.escape(caption)}</h2>", _table(rows[0], rows[1:])]
    if paper.figures:
        parts.append("<h2>Figures</h2>")
        parts += [f'<p><img src="{html.escape(p.name)}" alt="{html.escape(p.stem)}"></p>' for p in paper.figures]
    if paper.files:
        links = ", ".join(f'<a href="{html.escape(p.name)}">{html.escape(p.name)}</a>' for p in paper.files)
        parts.append(f"<h2>Data</h2><p>{links}</p>")
    if paper.notes:
        parts += ["<h2>Notes</h2>", "<ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in paper.notes) + "</ul>"]
    _write(folder / "index.html", _document(paper.title, "\n".join(parts), "../style.css"))
    verdicts = Counter(verdict_class(claim.verdict) for claim in paper.claims)
    return SitePage(paper.name, paper.title, command, verdicts, tuple(p.name for p in paper.figures))


MAP = "privacy-map"
"""The reproduction the index shows first, with its figure: every system on one privacy–utility map."""


def _featured_map(pages: list[SitePage]) -> str:
    page = next((page for page in pages if page.name == MAP), None)
    if page is None:
        return (
            '<p class="muted">No privacy–utility map in this store yet: '
            "<code>privbandits run privacy-map</code> adds it.</p>\n"
        )
    link = f"{html.escape(page.name)}/index.html"
    figure = (
        f'<p><a href="{link}"><img src="{html.escape(page.name)}/{html.escape(page.figures[0])}" '
        f'alt="privacy–utility map"></a></p>'
        if page.figures
        else ""
    )
    return (
        "<h2>The privacy–utility map</h2>\n"
        f'<p>Every private system and the standard DP bandits on shared problems: <a href="{link}">'
        f"{html.escape(page.title)}</a>.</p>\n{figure}\n<h2>Reproductions</h2>\n"
    )


AUDIT = "audit"
"""The folder of the empirical privacy audit's page."""


def _audit_class(row: dict) -> str:
    return "other" if row["passed"] is None else "yes" if row["passed"] else "no"


def audit_page(
    results: list[dict], out: Path, tables: dict | None = None, mutant_units: list[dict] | None = None
) -> str:
    """Write ``out/audit/index.html`` from stored audit units (calibration tables and mutants' units); returns the
    index's paragraph linking to it."""
    from privbandits.audit.calibrations import SIGMA_NOTE, tables_for_print
    from privbandits.audit.mutants import caught
    from privbandits.audit.run import HEADER, MUTANT_HEADER, MUTATION_NOTE, NOT_AUDITED, cells, mutant_cells, rows

    table_rows = rows(results)
    head = "".join(_cell(column, "th") for column in HEADER)
    body = "".join(
        "<tr>" + "".join(_cell(c) for c in cells(row)[:-1]) + _cell(row["verdict"], css=f"verdict-{_audit_class(row)}")
        + "</tr>" for row in table_rows
    )  # fmt: skip
    notes = [f"{r['mechanism']}: {r['relation']}." + (f" {r['note']}." if r["note"] else "") for r in table_rows]
    notes += [f"{name} (not audited): {why}." for name, why in NOT_AUDITED.items()]
    parts = [
        '<nav><a href="../index.html">← all results</a></nav>',
        "<h1>Empirical privacy audit</h1>",
        '<p class="muted">Rebuilt from the results store; rerun with <code>privbandits audit</code>. '
        "ε ≥ is a one-sided 95% Clopper–Pearson lower bound on ε at the claimed δ, from a threshold test "
        "chosen on one half of the samples and measured on the other; pair ε is the exact ε of the "
        "neighbouring pair used. A weakened copy (injected by the audit) must get a bound above the claim.</p>",
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>",
        "<h2>Neighbouring relations and notes</h2>",
        "<ul>" + "".join(f"<li>{html.escape(note)}</li>" for note in notes) + "</ul>",
    ]
    if mutant_units:
        parts += ["<h2>Mutation suite</h2>", f'<p class="muted">{html.escape(MUTATION_NOTE)}</p>',
                  _table(MUTANT_HEADER, [mutant_cells(unit) for unit in mutant_units])]  # fmt: skip
    if tables:
        parts.append(f'<p class="muted">{html.escape(SIGMA_NOTE)}</p>')
        for title, header, lines in tables_for_print(tables):
            parts += [f"<h2>{html.escape(title)}</h2>", _table(header, lines)]
    _write(out / AUDIT / "index.html", _document("Empirical privacy audit", "\n".join(parts), "../style.css"))
    passed = sum(row["passed"] is True for row in table_rows)
    dp = sum(row["passed"] is not None for row in table_rows)
    mutant_units = mutant_units or []
    suite = f"; {sum(map(caught, mutant_units))} of {len(mutant_units)} mutants caught" if mutant_units else ""
    return (
        f'<h2>Empirical privacy audit</h2>\n<p><a href="{AUDIT}/index.html">{passed} of {dp} DP mechanisms</a> '
        f"keep their claimed ε and are caught when weakened{suite}; notions that are not DP are marked.</p>\n"
    )


EVALUATION = "evaluation"
"""The folder of the off-policy evaluations' page."""


def evaluation_page(units: list[dict], sweeps: list[dict], out: Path) -> str:
    """Write ``out/evaluation/index.html`` from stored evaluation units (its figure beside it); returns the index's
    paragraph linking to it."""
    from privbandits.experiments import evaluations as ev

    parts = [
        '<nav><a href="../index.html">← all results</a></nav>',
        "<h1>Off-policy evaluation</h1>",
        '<p class="muted">Rebuilt from the results store; rerun with <code>privbandits evaluate</code>. Each policy '
        "is trained on the first rounds of its log and evaluated on the rest; DP estimates spend the budget listed "
        "under them.</p>",
        _table(ev.ESTIMATE_HEADER, ev.estimate_cells(units)) if units else "",
        "<ul>" + "".join(f"<li>{html.escape(note)}</li>" for note in ev.privacy_notes(units)) + "</ul>",
    ]
    if sweeps:
        ev.figure(sweeps, out / EVALUATION / "dp-error.png")
        parts += ["<h2>DP estimators' error over ε</h2>", '<p><img src="dp-error.png" alt="error over ε"></p>',
                  _table(ev.SWEEP_HEADER, ev.sweep_cells(sweeps))]  # fmt: skip
    _write(out / EVALUATION / "index.html", _document("Off-policy evaluation", "\n".join(parts), "../style.css"))
    return (
        f'<h2>Off-policy evaluation</h2>\n<p><a href="{EVALUATION}/index.html">{len(units)} evaluation(s)</a> of '
        "policies on logged data, with and without differential privacy.</p>\n"
    )


def index_page(pages: list[SitePage], out: Path, audit: str = "") -> Path:
    """``out/index.html``: every reproduction with its claim verdicts, linking to its page (and the audit's)."""
    rows = []
    for page in pages:
        counts = page.verdicts
        rows.append(
            "<tr>"
            + f'<td><a href="{html.escape(page.name)}/index.html">{html.escape(page.name)}</a></td>'
            + _cell(page.title)
            + _cell(counts["yes"], css="verdict-yes" if counts["yes"] else None)
            + _cell(counts["other"], css="verdict-other" if counts["other"] else None)
            + _cell(counts["no"], css="verdict-no" if counts["no"] else None)
            + "</tr>"
        )
    header = "".join(_cell(c, "th") for c in ("reproduction", "what", "reproduced", "partly / other", "not"))
    body = (
        "<h1>privbandits results</h1>\n"
        '<p class="muted">Every page is rebuilt from the results store by <code>privbandits site</code>, '
        "so it shows exactly what ran. Claims are the papers' statements beside our measurements.</p>\n"
        + _featured_map(pages)
        + audit
        + f"<table><thead><tr>{header}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )
    _write(out / "style.css", STYLE.lstrip())
    return _write(out / "index.html", _document("privbandits results", body, "style.css"))


def build_site(store, out: Path, names: list[str] | None = None) -> list[SitePage]:
    """Report every stored reproduction (or ``names``) into ``out`` and write the pages and index."""
    from privbandits.experiments import catalog
    from privbandits.experiments import reproduction as repro
    from privbandits.experiments.book import rerun_command

    pages = []
    for name in sorted(names or store.invocations()):
        reproduction = catalog.find(name, store)
        options = repro.resolve_options(reproduction, {}, store)
        folder = out / reproduction.name
        paper = repro.report(reproduction, options, store, folder)
        pages.append(reproduction_page(paper, rerun_command(reproduction, options), folder))
    from privbandits.experiments.audits import stored_audits, stored_mutants, stored_tables
    from privbandits.experiments.evaluations import stored

    audits = stored_audits(store)
    units, sweeps = stored(store)
    extra = audit_page(audits, out, stored_tables(store), stored_mutants(store)) if audits else ""
    extra += evaluation_page(units, sweeps, out) if units or sweeps else ""
    index_page(pages, out, extra)
    return pages
