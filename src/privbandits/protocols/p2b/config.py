"""P2B's settings (:class:`P2BConfig`) and how private agents use a code (:class:`Representation`).

Re-exported by :mod:`privbandits.protocols.p2b.core`; a module of its own so the settings stay light to import.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from privbandits.linear.tiebreak import TieBreak
from privbandits.options import check_fields, option
from privbandits.validation import Boolean, Choice, Integer, NoneOr, Real


class Representation(StrEnum):
    """How private agents use a code (spec §9 item 1).

    ONE_HOT
        a one-hot vector of length k: a per-(arm, code) model (default).
    SCALAR_CODE
        the code value as a 1-D real feature, as the reference code does;
        effectively context-free (§4.5).
    """

    ONE_HOT = "one_hot"
    SCALAR_CODE = "scalar_code"


@dataclass(frozen=True)
class P2BConfig:
    """Parameters of one P2B simulation (defaults: the paper's and reference code's, spec §5.1).

    ``shared_warm_agent`` carries ONE warm agent across the late users, as the
    reference code does (§9 item 2); by default each late user gets its own copy.
    ``omega`` (optional) turns the ledger's δ proxy on (Eq. 3).
    """

    participation: float = option(Real(low=0, high=1), 0.5, "p, the probability a user shares")
    negative_rate: float = option(Real(low=0, high=1), 0.05, "probability a device reports a zero-reward tuple")
    threshold: int = option(Integer(low=1), 10, "l, the shuffler's crowd-blending threshold")
    alpha: float = option(Real(low=0), 1.0, "the agents' LinUCB α")
    early_fraction: float = option(
        Real(low=0, high=1, low_open=True, high_open=True), 0.7, "share of the users who play early and may share"
    )
    representation: Representation | str = option(
        Choice(Representation), Representation.ONE_HOT, "how private agents use a code: one-hot, or the code value"
    )
    shared_warm_agent: bool = option(Boolean(), False, "one warm agent carried across the late users (reference)")
    tie_break: str = option(Choice(TieBreak), "random", "rule among tied arms")
    omega: float | None = option(NoneOr(Real(low=0, low_open=True), "no δ"), None, "ω of the ledger's δ proxy (Eq. 3)")

    def __post_init__(self) -> None:
        check_fields(self, adopt=("representation",))
