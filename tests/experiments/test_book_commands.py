"""The book's rerun commands and data notes hold nothing of the machine that ran them: no data-cache path
(``data = mnist`` alone reads the cache's MNIST), and a section asked for twice is written once."""

from __future__ import annotations

from privbandits.datasets.cache import CACHE_ENV
from privbandits.experiments.book import book_sections, rerun_command, write_book
from privbandits.experiments.catalog import find
from privbandits.papers.data_choice import shown_source
from privbandits.papers.mpc.options import MNIST_STEMS


def _mnist_folder(root):
    folder = root / "mnist"
    folder.mkdir(parents=True)
    for stem in MNIST_STEMS:
        (folder / stem).write_bytes(b"")
    return folder


def test_the_rerun_command_leaves_out_the_data_caches_mnist_folder_and_keeps_any_other(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    cached, other = _mnist_folder(tmp_path / "cache"), _mnist_folder(tmp_path / "elsewhere")
    fig2 = find("mpc-fig2")
    command = "privbandits run mpc-fig2"
    assert rerun_command(fig2, fig2.parse({"data": "mnist", "mnist": str(cached)})) == f"{command} -o data=mnist"
    assert rerun_command(fig2, fig2.parse({"mnist": str(other)})) == f"{command} -o mnist={other} -o data=mnist"


def test_a_data_note_names_the_data_cache_not_its_path(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    source = f"MNIST at {tmp_path / 'cache' / 'mnist'}, 60000 train / 10000 held out"
    assert shown_source(source) == "MNIST at <data cache>/mnist, 60000 train / 10000 held out"
    assert shown_source("MNIST at /data/mine, 60000 train") == "MNIST at /data/mine, 60000 train"


def test_a_section_given_twice_is_written_once(tmp_path):
    first, second = "## `privbandits run a`\n\none\n", "## `privbandits run b`\n\ntwo\n"
    book = write_book([first, second, first], tmp_path / "book.md", ["a"])
    assert list(book_sections(book.read_text())) == ["a", "b"]


def test_an_option_path_through_a_link_to_the_default_is_not_shown_as_changed(tmp_path):
    from privbandits.experiments.book import _changed

    (tmp_path / "data").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "data")
    assert _changed("folder", tmp_path / "data", tmp_path / "link") == {}
    assert _changed("folder", tmp_path / "data", tmp_path) == {"folder": str(tmp_path)}
