"""MkDocs hooks of the docs site (mkdocs.yml `hooks:`): what the pages show that is generated at build time.

* ``<!-- cli-reference -->`` becomes the reference of every ``privbandits`` command, read from the Typer app
  (:mod:`cli_reference`), so a new option or command appears without an edit here.
* ``<!-- benchmarks -->`` becomes the list of benchmarks/*.py: each script's command and what it measures
  (:mod:`benchmarks_list`).
* ``<!-- evaluation-error-plot -->`` becomes the DP estimators' error over ε, drawn from the results book's
  ``privbandits evaluate`` section (:mod:`evaluation_plot`): no figure is stored in the repository.
* ``<!-- privacy-semantics -->`` becomes the privacy–utility map's semantics table, from the rows its report
  uses (:mod:`semantics_table`).
* ``<!-- api PACKAGE -->`` becomes one mkdocstrings directive (``::: module.Name``) per name the package
  exports (its ``lazy_exports`` table, read from its source, or its ``__all__``), so the API reference lists
  exactly the public API; mkdocstrings then renders each from its docstring.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from api_reference import api_markdown  # noqa: E402
from benchmarks_list import benchmarks_markdown  # noqa: E402
from cli_reference import cli_markdown  # noqa: E402
from evaluation_plot import evaluation_plot_markdown  # noqa: E402
from semantics_table import semantics_markdown  # noqa: E402

_API = re.compile(r"<!-- api ([\w.]+) -->")


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ARG001 (MkDocs' hook signature)
    """Fill the generated blocks of a page."""
    if "<!-- cli-reference -->" in markdown:
        markdown = markdown.replace("<!-- cli-reference -->", cli_markdown())
    if "<!-- privacy-semantics -->" in markdown:
        markdown = markdown.replace("<!-- privacy-semantics -->", semantics_markdown())
    if "<!-- evaluation-error-plot -->" in markdown:
        markdown = markdown.replace("<!-- evaluation-error-plot -->", evaluation_plot_markdown())
    if "<!-- benchmarks -->" in markdown:
        markdown = markdown.replace("<!-- benchmarks -->", benchmarks_markdown())
    return _API.sub(lambda match: api_markdown(match.group(1)), markdown)
