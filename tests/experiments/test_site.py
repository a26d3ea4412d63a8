"""The static results site: built from the store, self-contained, and loadable by a real browser; and the docs
site (`make docs`, issue 33), every page of which a real browser loads without a console error."""

from __future__ import annotations

import functools
import http.server
import importlib.util
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from html.parser import HTMLParser
from pathlib import Path

import pytest
from project_paths import ROOT
from typer.testing import CliRunner

from privbandits.cli import app

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SCREENSHOT_DIR = ROOT / "test-output"

TINY_RUNS = [
    ["vertical-audit", "-o", "rounds=30", "-o", "dim=12", "-o", "n_arms=3", "-o", "n_parties=3"],
    ["vertical-synthetic-demo", "-o", "horizon=60", "-o", "seeds=0,1"],
]
TINY_MAP = ["privacy-map", *(f"-o{key}={value}" for key, value in [
    ("environments", "clustered_users"),  # one panel is enough for the index to feature the map
    ("horizon", 20), ("seeds", "0,1"), ("obd_events", 60), ("p2b_users", 100), ("p2b_codes", 8),
    ("epsilons", "1,10"), ("explorations", 0.1), ("participations", 0.5),
])]  # fmt: skip


class _References(HTMLParser):
    """Every ``href`` and ``src`` of a page, and the text of its table cells."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.cells: list[str] = []
        self._in_cell = False

    def handle_starttag(self, tag, attrs):
        self.links += [value for key, value in attrs if key in ("href", "src") and value]
        self._in_cell = tag in ("td", "th")

    def handle_endtag(self, tag):
        self._in_cell = False if tag in ("td", "th") else self._in_cell

    def handle_data(self, data):
        if self._in_cell:
            self.cells.append(data)


def _parse(path: Path) -> _References:
    parser = _References()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("site")
    store = folder / "r.sqlite"
    for command in TINY_RUNS:
        result = CliRunner().invoke(app, ["run", *command, "--store", str(store), "--out", str(folder / "out")])
        assert result.exit_code == 0, result.output
    result = CliRunner().invoke(app, ["site", "--store", str(store), "--out", str(folder / "site")])
    assert result.exit_code == 0, result.output
    assert "2 reproduction page(s)" in result.output
    return folder / "site"


@pytest.fixture(scope="module")
def map_site(tmp_path_factory) -> Path:
    """A site whose store holds a tiny privacy map."""
    folder = tmp_path_factory.mktemp("map-site")
    store = folder / "r.sqlite"
    result = CliRunner().invoke(app, ["run", *TINY_MAP, "--store", str(store), "--out", str(folder / "out")])
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(app, ["site", "--store", str(store), "--out", str(folder / "site")])
    assert result.exit_code == 0, result.output
    return folder / "site"


def test_the_index_features_the_privacy_map_with_its_figure_when_the_store_has_it(site, map_site):
    assert "privbandits run privacy-map" in (site / "index.html").read_text()  # the hint, before it ran
    index = _parse(map_site / "index.html")
    figure = next(link for link in index.links if link.endswith(".png"))
    assert figure.startswith("privacy-map/") and (map_site / figure).read_bytes()[:4] == b"\x89PNG"
    assert index.links.count("privacy-map/index.html") == 3  # the featured title and figure, and the table row


def test_the_index_links_every_stored_reproduction_and_every_reference_resolves_on_disk(site):
    index = _parse(site / "index.html")
    pages = [link for link in index.links if link.endswith("index.html")]
    assert pages == ["vertical-audit/index.html", "vertical-synthetic-demo/index.html"]
    for page in [site / "index.html", *(site / link for link in pages)]:
        for link in _parse(page).links:
            assert "://" not in link and not link.startswith("//"), f"{page}: external reference {link}"
            assert (page.parent / link).resolve().is_file(), f"{page}: broken reference {link}"
    assert "://" not in (site / "style.css").read_text()


def test_a_page_carries_the_reports_claims_figures_and_rerun_command(site):
    page = (site / "vertical-audit" / "index.html").read_text(encoding="utf-8")
    paper = (site.parent / "out" / "vertical-audit-paper.md").read_text()
    assert "privbandits run vertical-audit -o rounds=30 -o dim=12 -o n_arms=3 -o n_parties=3" in page
    cells = _parse(site / "vertical-audit" / "index.html").cells
    for claim_row in (line for line in paper.splitlines() if line.startswith("| Thm 4.2")):
        where, statement = (part.strip() for part in claim_row.strip("|").split("|")[:2])
        assert where in cells and statement in cells
    images = [link for link in _parse(site / "vertical-synthetic-demo" / "index.html").links if link.endswith(".png")]
    assert images and all((site / "vertical-synthetic-demo" / image).read_bytes()[:4] == b"\x89PNG" for image in images)
    assert 'class="verdict-' in page


def test_site_refuses_a_missing_store_in_one_line(tmp_path):
    result = CliRunner().invoke(app, ["site", "--store", str(tmp_path / "none.sqlite"), "--out", str(tmp_path)])
    assert result.exit_code == 2 and "does not exist" in result.output and "Traceback" not in result.output


@pytest.mark.browser
@pytest.mark.parametrize("which", ["site", "map_site"])
def test_headless_chromium_loads_every_page_without_errors_or_broken_images(request, which):
    site = request.getfixturevalue(which)
    if CHROMIUM is None or importlib.util.find_spec("playwright") is None:
        pytest.skip("browser test needs Debian's chromium and the playwright package: run `make test-browser`")
    from playwright.sync_api import sync_playwright

    pages = ["index.html", *(link for link in _parse(site / "index.html").links if link.endswith("index.html"))]
    flags = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=flags)
        tab = browser.new_page(viewport={"width": 1280, "height": 800})
        problems: list[str] = []
        tab.on("console", lambda message: message.type == "error" and problems.append(message.text))
        tab.on("pageerror", lambda error: problems.append(str(error)))
        tab.on("requestfailed", lambda request: problems.append(f"failed: {request.url}"))
        for name in pages:
            tab.goto((site / name).as_uri())
            broken = tab.eval_on_selector_all("img", "images => images.filter(i => !i.complete || !i.naturalWidth)")
            assert broken == [], f"{name}: broken images {broken}"
            assert tab.title(), f"{name}: no title"
        tab.goto((site / "index.html").as_uri())
        SCREENSHOT_DIR.mkdir(exist_ok=True)
        tab.screenshot(path=str(SCREENSHOT_DIR / f"{which}-index.png"), full_page=True)
        browser.close()
    assert problems == []
    assert (SCREENSHOT_DIR / f"{which}-index.png").stat().st_size > 1000


DOCS_SITE = ROOT / "site-docs"
NO_BROWSER = "browser test needs Debian's chromium and the playwright package: run `make test-browser`"


@pytest.fixture(scope="module")
def docs_site(tmp_path_factory) -> Path:
    """The built docs site: site-docs/ as `make docs` (which `make test-browser` runs first) left it, else built
    here in strict mode (needs the docs extra)."""
    if (DOCS_SITE / "index.html").is_file():
        return DOCS_SITE
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip("the docs site is not built and mkdocs is not installed: run `make docs` or `make test-browser`")
    out = tmp_path_factory.mktemp("docs-site")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)], cwd=ROOT,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, capture_output=True, text=True,
                          timeout=900)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return out


@contextmanager
def served(folder: Path) -> Iterator[str]:
    """``folder`` served as static files on 127.0.0.1 (the search's web worker cannot start from file://)."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format, *args):  # noqa: A002 (the base class's name)
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.browser
def test_headless_chromium_loads_every_docs_page_without_console_errors(request):
    """Every page of the docs site loads with no console error, no failed request and nothing fetched from
    outside; the index and one API page are screenshotted into test-output/."""
    if CHROMIUM is None or importlib.util.find_spec("playwright") is None:
        pytest.skip(NO_BROWSER)
    from playwright.sync_api import sync_playwright

    docs_site = request.getfixturevalue("docs_site")  # after the skip: building it takes a while

    pages = sorted(p.relative_to(docs_site).as_posix() for p in docs_site.rglob("*.html") if p.name != "404.html")
    assert len(pages) >= 30 and "api/linear.html" in pages and "tutorials/deploy-local.html" in pages
    flags = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]
    problems: list[str] = []
    with served(docs_site) as base, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=flags)
        tab = browser.new_page(viewport={"width": 1280, "height": 800})
        where = {"page": ""}

        def problem(text: str) -> None:
            problems.append(f"{where['page']}: {text}")

        tab.route("**/*", lambda route: route.continue_() if route.request.url.startswith(base) else route.abort())
        tab.on("console", lambda message: message.type == "error" and problem(message.text))
        tab.on("pageerror", lambda error: problem(str(error)))
        tab.on("requestfailed", lambda failed: problem(f"failed {failed.url} ({failed.failure})"))
        for name in pages:
            where["page"] = name
            tab.goto(base + name, wait_until="networkidle")  # nothing pending (the favicon) is cut by the next goto
            assert tab.title(), f"{name}: no title"
            assert tab.locator("article h1").count() == 1, f"{name}: no heading"
        SCREENSHOT_DIR.mkdir(exist_ok=True)
        for name, shot in (("index.html", "docs-index.png"), ("api/linear.html", "docs-api-linear.png")):
            tab.goto(base + name, wait_until="networkidle")
            tab.screenshot(path=str(SCREENSHOT_DIR / shot), full_page=True)
        browser.close()
    assert problems == []
    assert (SCREENSHOT_DIR / "docs-index.png").stat().st_size > 1000
    assert (SCREENSHOT_DIR / "docs-api-linear.png").stat().st_size > 1000


def test_the_docs_server_serves_the_folder_it_is_given(tmp_path):
    import urllib.request

    (tmp_path / "index.html").write_text("<title>x</title>")
    with served(tmp_path) as base, urllib.request.urlopen(base + "index.html", timeout=10) as response:
        assert response.read() == b"<title>x</title>"
