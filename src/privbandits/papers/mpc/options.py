"""Options of the MPC bandit paper's reproductions (light: the catalogue and ``show`` import this)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, DirectoryPath, Field, ValidationInfo, field_validator, model_validator

from privbandits.experiments.reproduction import Options
from privbandits.papers.data_choice import cached_mnist

MAX_PRECISION = 26
"""Largest fixed-point precision L the learner accepts (``protocols.mpc_bandit.MAX_PRECISION``; not imported: heavy)."""

FIG4_ARMS = (2, 5, 10, 20, 40, 60, 100)

Epsilon = Annotated[float, Field(ge=0.0, le=1.0)]
Count = Annotated[int, Field(ge=1)]
ArmCount = Annotated[int, Field(ge=2)]
Eta = Annotated[float, Field(ge=math.log(10), allow_inf_nan=True)]

Runs = Annotated[int, Field(ge=1, description="independent runs per setting (run r uses seed + r)")]
Seed = Annotated[
    int,
    Field(ge=0, description="first seed: run r seeds the learner with seed + r, the data order with 1000 + seed + r"),
]
MNIST_STEMS = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
"""The IDX files an MNIST folder holds, plain or ``.gz`` (``datasets.mnist.MNIST_FILES``; not imported: heavy)."""


def _mnist_folder(folder: Path | None) -> Path | None:
    """``folder`` if it holds the four MNIST IDX files."""
    if folder is not None:
        missing = [s for s in MNIST_STEMS if not any((folder / n).is_file() for n in (s, f"{s}.gz"))]
        if missing:
            raise ValueError(f"{str(folder)!r} has no {', '.join(missing)} (plain or .gz): not an MNIST folder")
    return folder


Mnist = Annotated[
    DirectoryPath | None,
    AfterValidator(_mnist_folder),
    Field(description="folder of the four MNIST IDX files, read with data = mnist or auto (none: see data)"),
]
Epsilons = Annotated[tuple[Epsilon, ...], Field(min_length=1, description="exploration probabilities ε in [0, 1]")]

DataSet = Annotated[
    Literal["auto", "mnist5k", "fashion", "mnist", "digits"],
    Field(
        description="mnist5k: real MNIST, 5,000 images (`privbandits data fetch mnist5k`); fashion: Fashion-MNIST, "
        "60,000 rounds (`privbandits data fetch fashion-mnist`); mnist: the IDX folder given as mnist=, else the "
        "full MNIST, 60,000 rounds (`privbandits data fetch mnist`); digits: "
        "scikit-learn's 8x8 digits, the stand-in; auto: mnist= if given, else mnist5k if cached, else digits",
        validate_default=True,
    ),
]


class DataOptions(Options):
    """The data a learner sweeps: ``data`` picks the set; ``auto`` is resolved when the options are parsed,
    so the options a store remembers name the data that ran."""

    mnist: Mnist = None
    data: DataSet = "auto"

    _cached_mnist = model_validator(mode="before")(cached_mnist)

    @field_validator("data")
    @classmethod
    def _resolve(cls, value: str, info: ValidationInfo) -> str:
        from privbandits.papers.data_choice import resolve_data

        return resolve_data(value, info.data.get("mnist") is not None)

    def shown_options(self, changed: dict[str, str]) -> dict[str, str]:
        """``mnist=`` is left out where ``data = mnist`` alone gives the same folder (the data cache's MNIST)."""
        from privbandits.papers.data_choice import from_cache

        if self.data == "mnist" and self.mnist is not None and from_cache(self.mnist):
            return {key: value for key, value in changed.items() if key != "mnist"}
        return changed


class Fig2Options(DataOptions):
    """Fig. 2: reward during training, private learner vs plaintext twin."""

    epsilons: Epsilons = (0.01, 0.05, 0.1, 0.3)
    runs: Runs = 2
    seed: Seed = 0


class Fig3Options(DataOptions):
    """Fig. 3: reward vs η for three data set sizes."""

    fractions: Annotated[
        tuple[Annotated[float, Field(gt=0.0, le=1.0)], ...],
        Field(min_length=1, description="data set sizes T as fractions in (0, 1] of one sweep"),
    ] = (0.2, 0.5, 1.0)
    runs: Runs = 5
    private_etas: Annotated[
        tuple[Eta, ...],
        Field(description="η values (>= log 10; inf: no exploration) at which one private run checks the twin"),
    ] = (4.0, 6.0, math.inf)
    seed: Seed = 0


class Fig4Options(Options):
    """Fig. 4: time per round vs |A|."""

    arm_counts: Annotated[tuple[ArmCount, ...], Field(min_length=1, description="numbers of arms |A| (>= 2)")] = (
        FIG4_ARMS
    )
    rounds: Annotated[int, Field(ge=1, description="private rounds timed per |A| (after 2 warm-up rounds)")] = 5
    seed: Annotated[int, Field(ge=0, description="seed of the random contexts, rewards and learner")] = 0


class Fig5Options(Options):
    """Fig. 5: time and traffic per round vs |P|."""

    party_counts: Annotated[
        tuple[Annotated[int, Field(ge=2)], ...],
        Field(min_length=1, description="numbers of computing parties |P| (>= 2; D = 20 split evenly)"),
    ] = (2, 3, 4, 5)
    arm_counts: Annotated[
        tuple[ArmCount, ...], Field(min_length=1, description="numbers of arms |A|, one line each")
    ] = (5, 10, 20)
    rounds: Annotated[int, Field(ge=1, description="private rounds timed per setting (after 2 warm-up rounds)")] = 5
    seed: Annotated[int, Field(ge=0, description="seed of the random contexts, rewards and learner")] = 0


class Fig6Options(DataOptions):
    """Fig. 6: reward vs η for several |A|, k-means arms."""

    arm_counts: Annotated[
        tuple[ArmCount, ...], Field(min_length=1, description="numbers of k-means arms |A| (>= 2)")
    ] = (5, 10, 20, 40)
    runs: Runs = 3
    bandwidth: Annotated[float, Field(gt=0.0, description="σ of the rewards exp(−‖x − c_a‖²/(2σ)) (paper: 1/2)")] = 0.5
    seed: Seed = 0


class Fig7Options(DataOptions):
    """Fig. 7: membership-inference advantage during training."""

    epsilons: Epsilons = (0.01, 0.05, 0.1, 0.3)
    runs: Runs = 50
    checkpoints: Annotated[int, Field(ge=1, description="evenly spaced checkpoints over the sweep")] = 10
    seed: Seed = 0


class Fig8Options(DataOptions):
    """Fig. 8: reward vs fixed-point precision L."""

    precisions: Annotated[
        tuple[Annotated[int, Field(ge=1, le=MAX_PRECISION)], ...],
        Field(min_length=1, description=f"fixed-point precisions L in bits (1 … {MAX_PRECISION})"),
    ] = (14, 16, 18, 20, 22, 24, 26)
    runs: Runs = 3
    epsilon: Annotated[float, Field(ge=0.0, le=1.0, description="exploration probability ε in [0, 1]")] = 0.01
    sweeps: Annotated[int, Field(ge=1, description="passes over the training set per run")] = 3
    seed: Seed = 0


class Fig9Options(DataOptions):
    """Fig. 9: reward vs Newton–Raphson iterations."""

    iterations: Annotated[
        tuple[Annotated[int, Field(ge=0)], ...],
        Field(min_length=1, description="Newton–Raphson iterations of the reciprocal (>= 0)"),
    ] = (1, 2, 3, 5, 7)
    runs: Runs = 3
    epsilon: Annotated[float, Field(ge=0.0, le=1.0, description="exploration probability ε in [0, 1]")] = 0.01
    sweeps: Annotated[int, Field(ge=1, description="passes over the training set per run")] = 1
    seed: Seed = 0


class Table1Options(Options):
    """Table 1: cost of the secure operations and of the whole learner round."""

    n_arms: Annotated[int, Field(ge=2, description="length |A| of the vectors the operations run on (>= 2)")] = 100
    repeat: Annotated[int, Field(ge=1, description="timed repetitions of each secure operation")] = 20
    seed: Annotated[int, Field(ge=0, description="seed of the random vectors, the engine and the learner")] = 0
