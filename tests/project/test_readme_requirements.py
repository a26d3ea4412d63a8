"""The input-requirement tables of docs/requirements.md ("What each protocol requires", moved there from the
README by issue 33) are the declarations' (issue 32), and the declarations are what the classes use: their
defaults are the signatures', their refusals quote their constraints."""

from __future__ import annotations

import inspect

import pytest
from project_paths import ROOT

from privbandits.experiments.marked_blocks import block_pattern
from privbandits.experiments.requirements import TAG, _sections, section_table, write_tables
from privbandits.linear.policies import EpsilonGreedy, LinTS, LinUCB
from privbandits.options import REQUIRED, Option, options_of
from privbandits.protocols.mpc_bandit import MPCBanditConfig
from privbandits.validation import Integer, InvalidInputError

PAGE = ROOT / "docs" / "requirements.md"


def test_the_page_tables_are_what_the_declarations_write():
    text = PAGE.read_text(encoding="utf-8")
    assert write_tables(text) == text, "docs/requirements.md's tables are stale: run `make declarations`"


def test_every_section_has_one_block_on_the_page():
    found = [name for name, _ in block_pattern(TAG).findall(PAGE.read_text(encoding="utf-8"))]
    assert sorted(found) == sorted(_sections())


def test_a_stale_table_is_rewritten_and_an_unknown_section_refused():
    stale = "<!-- requirements mpc -->\n| `n_arms` | an integer >= 1 |\n<!-- /requirements -->"
    written = write_tables(stale)
    assert written != stale and "| `n_arms` | an integer >= 2 | `10` |" in written
    assert written == write_tables(written)
    with pytest.raises(ValueError, match="unknown section; known: linear, p2b"):
        write_tables("<!-- requirements nope -->\n<!-- /requirements -->")


def test_an_option_shared_by_classes_is_one_row_and_a_different_default_another():
    table = section_table("linear")
    assert "| `reg` | LinUCB, LinTS, EpsilonGreedy, RidgeStatistics | a finite real number > 0 | `1.0` |" in table
    assert "| `layout` | LinUCB, LinTS | one of 'shared', 'disjoint' | `'shared'` |" in table
    assert "| `layout` | EpsilonGreedy | one of 'shared', 'disjoint' | `'disjoint'` |" in table
    assert "\\|A\\|, the number of arms" in section_table("mpc")  # a | in a cell does not split it


def _signature_defaults(cls: type) -> dict[str, object]:
    defaults: dict[str, object] = {}
    for klass in reversed(cls.__mro__):
        if "__init__" in vars(klass):
            for name, parameter in inspect.signature(vars(klass)["__init__"]).parameters.items():
                if name not in ("self", "kwargs"):
                    defaults[name] = REQUIRED if parameter.default is inspect.Parameter.empty else parameter.default
    return defaults


@pytest.mark.parametrize("cls", sorted({cls for classes in _sections().values() for cls in classes}, key=str))
def test_declared_defaults_are_the_signatures(cls):
    """A class keeping its declarations in OPTIONS repeats the defaults in its signature: they must agree (a
    dataclass declared with option() has one default by construction)."""
    signature = _signature_defaults(cls)
    for name, declared in options_of(cls).items():
        assert signature[name] == declared.default, (cls.__name__, name)


def test_the_declaration_is_what_a_refusal_quotes():
    with pytest.raises(InvalidInputError, match=r"^LinUCB: alpha must be a finite real number >= 0, got nan$"):
        LinUCB(3, 2, alpha=float("nan"))
    assert str(options_of(LinTS)["v"].constraint) == "a finite real number >= 0"
    assert options_of(EpsilonGreedy)["layout"].default == "disjoint" != options_of(LinUCB)["layout"].default
    with pytest.raises(InvalidInputError, match=r"^MPCBanditConfig: n_arms must be an integer >= 2, got 1$"):
        MPCBanditConfig(n_arms=1)


def test_an_option_checks_and_words_its_refusal():
    plain, worded = Option(Integer(low=2), 3, "k"), Option(Integer(low=2), 3, "k", "{name} needs {bounds}: {value}")
    assert plain.check(5, "k", "Owner") == 5
    with pytest.raises(InvalidInputError, match=r"^Owner: k must be >= 2, got 1$"):
        plain.check(1, "k", "Owner")
    with pytest.raises(InvalidInputError, match=r"^k needs >= 2: 1.5$"):
        worded.check(1.5, "k", "Owner")
