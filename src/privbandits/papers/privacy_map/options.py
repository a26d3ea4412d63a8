"""Options of the privacy–utility map (light: the catalogue and ``privbandits show`` import this)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import DirectoryPath, Field, ValidationInfo, field_validator, model_validator

from privbandits.experiments.reproduction import Distinct, Options
from privbandits.papers.data_choice import cached_mnist

Environment = Literal["linear_gaussian", "clustered_users", "classification", "obd", "p2b_population"]
ENVIRONMENTS: tuple[Environment, ...] = (
    "linear_gaussian",
    "clustered_users",
    "classification",
    "obd",
    "p2b_population",
)

ClassificationData = Literal["auto", "mnist5k", "mnist", "digits"]
"""Data sets of the classification panel (``auto`` is resolved to one of the others at parse time)."""

Seed = Annotated[int, Field(ge=0)]
Epsilon = Annotated[float, Field(gt=0)]
Exploration = Annotated[float, Field(gt=0, le=1)]
Participation = Annotated[float, Field(gt=0, lt=1)]


class MapOptions(Options):
    """The privacy–utility map: environments, seeds, sizes and each system's privacy settings."""

    environments: Annotated[tuple[Environment, ...], Distinct] = Field(
        ENVIRONMENTS, description="panels of the map (obd is skipped, with a note, when its folder is absent)"
    )
    seeds: Annotated[tuple[Seed, ...], Distinct] = Field(
        (0, 1, 2, 3, 4), description="seeds: one run of every point per seed (mean and 95% interval over them)"
    )
    horizon: Annotated[int, Field(ge=2)] = Field(
        2000, description="rounds of the stream environments (linear_gaussian, clustered_users, classification)"
    )
    classification_horizon: Annotated[int, Field(ge=2)] | None = Field(
        None,
        description="rounds of the classification panel (none: horizon), so the linear-Gaussian and clustered "
        "panels can run long (horizon=100000) while the classification runs stay as stored",
    )
    obd_events: Annotated[int, Field(ge=2)] | None = Field(
        None, description="logged events replayed on obd (none: the whole log)"
    )
    epsilons: Annotated[tuple[Epsilon, ...], Distinct] = Field(
        (0.1, 0.5, 1.0, 2.0, 5.0, 10.0), description="ε of the three DP baselines and of FCLUB's privatizers"
    )
    delta: Annotated[float, Field(gt=0, lt=1)] = Field(1e-5, description="δ of the DP baselines and FCLUB")
    calibration: Literal["analytic", "paper"] = Field(
        "analytic",
        description="noise of the DP baselines (their calibration) and CDP-FCLUB-DC (its noise_variance): analytic: "
        "the analytic Gaussian, the smallest σ that meets (ε, δ); paper: each paper's formula (several times the "
        "noise the guarantee needs; the map before issue 31)",
    )
    shuffle_batch: Annotated[int, Field(ge=2)] | None = Field(
        None,
        description="users per shuffled batch of Shuffle-DP LinUCB (none: its default 100); a point whose batch "
        "is too small to amplify at (ε, δ) is labelled 'not amplified (local DP)' and ranked with local DP",
    )
    shuffle_batches: Annotated[tuple[Annotated[int, Field(ge=2)], ...], Distinct] | None = Field(
        None,
        description="batch sizes of extra Shuffle-DP LinUCB points beside shuffle_batch's (none: one size, the "
        "smallest batch within the panel's horizon whose shuffled reports amplify at every map ε ≤ 1, or at the "
        "smallest ε when none is ≤ 1, by Feldman, McMillan & Talwar 2021, Thm 3.1); each point's label names its "
        "batch and, where it amplifies, its central ε; where it does not, it says local DP",
    )
    explorations: Annotated[tuple[Exploration, ...], Distinct] = Field(
        (1.0, 0.5, 0.1, 0.05, 0.01, 0.001),
        description="exploration ε of the MPC ε-greedy learner; its per-round η = log(|A|/ε)",
    )
    private_mpc_seeds: Annotated[tuple[Seed, ...], Distinct] | None = Field(
        (0,),
        description="seeds on which the secret-shared MPC learner itself runs beside its twin (cost and a check; "
        "none: twin only)",
    )
    participations: Annotated[tuple[Participation, ...], Distinct] = Field(
        (0.1, 0.3, 0.5, 0.7, 0.9), description="P2B's participation p; its ε = −ln(1 − p)"
    )
    p2b_users: Annotated[int, Field(ge=10)] = Field(
        5000, description="users of the P2B population (70% early, sharing; 30% late, measured)"
    )
    p2b_codes: Annotated[int, Field(ge=2)] = Field(
        1024, description="P2B's encoder codes k (the paper's 2^10; fitted once and cached on disk)"
    )
    alpha: Annotated[float, Field(ge=0)] = Field(
        0.5, description="LinUCB width α of LinUCB, VFUCB and the DP baselines (the vertical paper's 0.5)"
    )
    mnist: DirectoryPath | None = Field(
        None,
        description="MNIST IDX folder (train-images-idx3-ubyte, …): the classification panel uses its train split "
        "with data = mnist or auto (none: see data)",
    )
    data: ClassificationData = Field(
        "auto",
        validate_default=True,
        description="data of the classification panel: mnist5k: real MNIST, 5,000 images, its 4,000-image train "
        "split (`privbandits data fetch mnist5k`); mnist: the IDX folder given as mnist=, else the data cache's "
        "full MNIST (`privbandits data fetch mnist`); digits: scikit-learn's "
        "8x8 digits, the offline stand-in; auto: mnist= if given, else mnist5k if cached, else digits (resolved "
        "when the options are parsed, so the stored options name the data that ran)",
    )
    obd_folder: DirectoryPath | None = Field(
        None, description="OBD campaign folder (none: ../shared/data/obd/random/all; skipped if absent)"
    )

    _cached_mnist = model_validator(mode="before")(cached_mnist)

    @field_validator("mnist")
    @classmethod
    def _idx_folder(cls, value: Path | None) -> Path | None:
        from privbandits.experiments.config import MNISTEnvConfig

        return None if value is None else Path(MNISTEnvConfig._idx_folder(str(value)))

    @field_validator("data")
    @classmethod
    def _resolve_data(cls, value: str, info: ValidationInfo) -> str:
        from privbandits.papers.data_choice import resolve_data

        return resolve_data(value, info.data.get("mnist") is not None)

    @field_validator("obd_folder")
    @classmethod
    def _campaign(cls, value: Path | None) -> Path | None:
        from privbandits.datasets.obd import EVENTS_FILE, ITEMS_FILE

        if value is None:
            return None
        missing = [name for name in (EVENTS_FILE, ITEMS_FILE) if not (value / name).is_file()]
        if missing:
            raise ValueError(f"must hold {EVENTS_FILE} and {ITEMS_FILE}; {value} lacks {', '.join(missing)}")
        return value.resolve()
