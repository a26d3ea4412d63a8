"""Options of the FCLUB reproductions (light: the catalogue and ``privbandits show`` import this).

The algorithm names live here too, so that the options can be typed by them without
importing the protocols.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal, get_args

from pydantic import DirectoryPath, Field, FilePath, field_validator

from privbandits.experiments.reproduction import Options

FULL_HORIZON = 2**17 - 2
"""The spec's horizon (§8 A22): 16 whole phases, the reference code's effective T (MovieLens used 2^18 − 2)."""

FAITHFUL: Final = "CDP-FCLUB-DC (faithful)"
Algorithm = Literal[
    "CDP-FCLUB-DC", "CDP-FCLUB-DC (faithful)", "FCLUB-DC", "FCLUB", "Homo-DC", "Homo", "SCLUB", "CLUB", "LinUCB"
]
ALGORITHMS: tuple[Algorithm, ...] = get_args(Algorithm)
COMMUNICATING = ("FCLUB", "FCLUB-DC", "CDP-FCLUB-DC", FAITHFUL)

MIN_HORIZON = 14
"""Three phase ends (t = 2, 6, 14): the fewest that Fig. 4's growth of the last phase over the one before needs."""

Horizon = Annotated[int, Field(ge=MIN_HORIZON)]
Algorithms = Annotated[tuple[Algorithm, ...], Field(min_length=1)]


def _distinct(values: tuple[str, ...]) -> tuple[str, ...]:
    repeated = sorted({value for value in values if values.count(value) > 1})
    if repeated:
        raise ValueError(f"must not repeat an algorithm (repeated: {', '.join(repeated)})")
    return values


def _horizon(what: str = "rounds T per run (the paper's: 2^17 − 2)"):
    return Field(FULL_HORIZON, description=what)


def _seeds():
    return Field(10, description="seeds 0 … seeds − 1 per curve (mean ± std over them)")


def _include_movielens():
    return Field(True, description="add the two MovieLens panels (real data) where their files exist")


def _movielens_horizon():
    return Field(None, description="rounds of the MovieLens runs (none: horizon; the reference code used 2^18 − 2)")


def _data_dir():
    return Field(
        None, description="folder of ml_500user_500item.npy and ml_1000user_d10.npy (none: ../shared/data/fclub)"
    )


Seeds = Annotated[int, Field(ge=1)]


def _ratings():
    return Field(
        None,
        description="MovieLens ratings for the A19 panel (ml-100k.inter or u.data; none: the data cache's "
        "MovieLens-100K, else the shipped 500×500 matrix)",
    )


class Fig2Options(Options):
    """Fig. 2: cumulative regret of every algorithm, synthetic and MovieLens."""

    horizon: Horizon = _horizon()
    seeds: Seeds = _seeds()
    algorithms: Algorithms = Field(ALGORITHMS, description="algorithms to run, comma-separated")
    include_movielens: bool = _include_movielens()
    movielens_horizon: Horizon | None = _movielens_horizon()
    data_dir: DirectoryPath | None = _data_dir()
    movielens_ratings: FilePath | None = _ratings()

    _algorithms = field_validator("algorithms")(_distinct)


class Fig3Options(Options):
    """Fig. 3: CDP-FCLUB-DC's regret versus d, ε, L, m, n (synthetic)."""

    horizon: Horizon = _horizon()
    seeds: Seeds = _seeds()
    algorithms: Algorithms = Field(("CDP-FCLUB-DC", FAITHFUL), description="algorithms studied, comma-separated")

    _algorithms = field_validator("algorithms")(_distinct)


class Fig4Options(Options):
    """Fig. 4: cumulative communication of FCLUB, FCLUB-DC and CDP-FCLUB-DC (units shared with Fig. 2)."""

    horizon: Horizon = _horizon()
    seeds: Seeds = _seeds()
    include_movielens: bool = _include_movielens()
    movielens_horizon: Horizon | None = _movielens_horizon()
    data_dir: DirectoryPath | None = _data_dir()
    movielens_ratings: FilePath | None = _ratings()


class Table3Options(Options):
    """Table 3: ms per round of every algorithm, one process, best of ``repeats`` runs."""

    horizon: Horizon = _horizon("rounds T per timed run (the paper's: 2^17 − 2)")
    repeats: Seeds = Field(3, description="timed runs per algorithm (seeds 0, 1, …); the best is kept")
    include_movielens: bool = Field(True, description="add the MovieLens (spec A19) column where its file exists")
    data_dir: DirectoryPath | None = _data_dir()
    movielens_ratings: FilePath | None = _ratings()


GAP_HORIZON = 2**14 - 2
"""Issue 15's horizon: 13 whole phases, T = 16,382 (the reference code's rounds for T in [8192, 16383))."""
GAP_ALGORITHMS: tuple[GapAlgorithm, ...] = ("FCLUB-DC", "CDP-FCLUB-DC", "FCLUB", "Homo-DC")
GapAlgorithm = Literal["FCLUB-DC", "CDP-FCLUB-DC", "FCLUB", "Homo-DC"]


class GapOptions(Options):
    """The reference code beside the reference-compatible preset on the reference's own 40 users (issue 15)."""

    horizon: Horizon = Field(GAP_HORIZON, description="rounds T per run (the reference code's measured: 16,382)")
    seeds: Seeds = _seeds()
    algorithms: Annotated[tuple[GapAlgorithm, ...], Field(min_length=1)] = Field(
        GAP_ALGORITHMS, description="algorithms compared, comma-separated"
    )
    ablation: bool = Field(True, description="also run each reference behaviour on and off (which closes the gap)")
    reference_dir: DirectoryPath | None = Field(
        None,
        description="a checkout of the reference code (ZhaoHaoRu/Federated-Clustering-of-Bandits; its "
        "raw_data/synthetic_data/10_theta.npy is the users); none: the comparison is skipped",
    )

    _algorithms = field_validator("algorithms")(_distinct)
