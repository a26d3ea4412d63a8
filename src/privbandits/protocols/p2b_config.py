"""P2B's settings (:class:`P2BConfig`) and how private agents use a code (:class:`Representation`).

Re-exported by :mod:`privbandits.protocols.p2b`; a module of its own so the settings stay light to import.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from privbandits.linear.policies import named_choice
from privbandits.linear.tiebreak import TieBreak
from privbandits.validation import Boolean, Choice, Integer, NoneOr, Real, validate


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

    participation: float = 0.5
    negative_rate: float = 0.05
    threshold: int = 10
    alpha: float = 1.0
    early_fraction: float = 0.7
    representation: Representation | str = Representation.ONE_HOT
    shared_warm_agent: bool = False
    tie_break: str = "random"
    omega: float | None = None

    def __post_init__(self) -> None:
        validate(
            None,  # the values are kept as given (a config's hash is of its fields)
            {
                "participation": Real(low=0, high=1),
                "negative_rate": Real(low=0, high=1),
                "threshold": Integer(low=1),
                "alpha": Real(low=0),
                "early_fraction": Real(low=0, high=1, low_open=True, high_open=True),
                "shared_warm_agent": Boolean(),
                "tie_break": Choice(TieBreak),
                "omega": NoneOr(Real(low=0, low_open=True), "no δ"),
            },
            vars(self),
        )
        object.__setattr__(self, "representation", named_choice(Representation, self.representation, "representation"))
