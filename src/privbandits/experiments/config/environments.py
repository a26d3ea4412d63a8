"""Environment configs: one pydantic model per environment ``kind``, and the tagged union of them.

Each model says what its environment offers (class flags read by the compatibility checks:
one context per arm, users, a population, a replayed log) and which of its fields name data
files, which enter the run spec by path and content hash.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from privbandits.experiments.config.base import Listed, _shared, _Strict, existing_path


class _EnvBase(_Strict):
    """What an environment offers, for the compatibility checks of :class:`ExperimentConfig`."""

    per_arm_contexts: ClassVar[bool] = False
    """One context per arm (shared-θ models); otherwise one context per round (disjoint models)."""
    has_users: ClassVar[bool] = False
    """Rounds name the user served (clustered users on local servers)."""
    population: ClassVar[bool] = False
    """A population of users with their interactions (P2B), not a stream of rounds."""
    replay: ClassVar[bool] = False
    """Rounds come from a log: only the logged arm's reward is known."""
    data_paths: ClassVar[tuple[str, ...]] = ()
    """Fields naming data files: they enter the run spec as path + content hash."""

    @property
    def binary_rewards(self) -> bool:
        """Every reward is 0 or 1."""
        return True

    @property
    def context_dim(self) -> int:
        raise NotImplementedError

    def shape(self) -> tuple[int, tuple[int, ...]]:
        """A replayed log's (logged events, partition of the context) (``replay``)."""
        raise NotImplementedError


class LinearGaussianEnvConfig(_EnvBase):
    """Vertical O3M paper §5.1: fresh unit-norm Gaussian contexts per arm, unit-norm θ*, Gaussian noise."""

    kind: Literal["linear_gaussian"]
    dim: int = Field(100, ge=1, le=100_000)
    n_arms: int = Field(10, ge=2, le=100_000)
    context_variance: float = Field(0.05, gt=0)
    theta_variance: float = Field(0.05, gt=0)
    noise_variance: float = Field(0.05, ge=0)

    @property
    def context_dim(self) -> int:
        return self.dim

    @property
    def binary_rewards(self) -> bool:
        return False

    per_arm_contexts: ClassVar[bool] = True


class DigitsEnvConfig(_EnvBase):
    """scikit-learn digits as a 10-arm classification bandit (offline MNIST stand-in; PCA + unit norm)."""

    kind: Literal["digits"]
    pca_components: int | None = Field(20, ge=1, le=64)
    unit_norm: bool = True
    order: Literal["shuffle", "sample"] = "shuffle"

    @property
    def context_dim(self) -> int:
        return self.pca_components or 64


class MNISTEnvConfig(_EnvBase):
    """MNIST from a folder of the four IDX files as a 10-arm classification bandit (MPC paper §6.1: PCA, unit norm)."""

    kind: Literal["mnist"]
    path: str = Field(description="folder holding train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-… (or .gz)")
    pca_components: int = Field(20, ge=1, le=784)
    split: Literal["train", "test"] = "train"
    order: Literal["shuffle", "sample"] = "shuffle"
    data_paths: ClassVar[tuple[str, ...]] = ("path",)

    @field_validator("path")
    @classmethod
    def _idx_folder(cls, value: str) -> str:
        from privbandits.datasets.mnist import MNIST_FILES

        folder = existing_path(value, "folder")
        for stem in MNIST_FILES.values():
            if not any((Path(folder) / name).is_file() for name in (stem, f"{stem}.gz")):
                raise ValueError(f"folder {value!r} has no {stem} or {stem}.gz (the MNIST IDX files)")
        return folder

    @property
    def context_dim(self) -> int:
        return self.pca_components


class MNIST5kEnvConfig(_EnvBase):
    """Real MNIST, 5,000 images from the data cache, as a 10-arm classification bandit (MPC paper §6.1 preprocessing).

    The data set of ``privbandits data fetch mnist5k`` (checksum checked), split as the MPC
    reproductions split it (:func:`privbandits.datasets.mnist5k.mnist5k_bandit`): a seeded
    ``held_out`` fraction (1,000 images) is the test split, the other 4,000 the train split;
    pixels / 255, PCA fitted on the train split, unit norm. The file enters the run spec by
    path and content hash (the pinned SHA-256 for the cached file).
    """

    kind: Literal["mnist5k"]
    path: str | None = Field(
        None,
        validate_default=True,
        description="a mnist_5k.csv(.gz)-format file (default: the data cache's, `privbandits data fetch mnist5k`)",
    )
    pca_components: int = Field(20, ge=1, le=784)
    split: Literal["train", "test"] = "train"
    held_out: float = Field(0.2, gt=0, lt=1, description="fraction held out as the test split (seeded)")
    split_seed: int = Field(0, ge=0, description="seed of the train / held-out split")
    order: Literal["shuffle", "sample"] = "shuffle"
    data_paths: ClassVar[tuple[str, ...]] = ("path",)

    @field_validator("path")
    @classmethod
    def _file(cls, value: str | None) -> str:
        if value is not None:
            return existing_path(value, "file")
        from privbandits.datasets.cache import DataError, cached, fetch_command, is_cached

        if not is_cached("mnist5k"):
            raise ValueError(
                f"MNIST-5k (real MNIST, 5,000 images) is not in the data cache; run `{fetch_command('mnist5k')}` "
                "first, or give path"
            )
        try:
            return str(cached("mnist5k").resolve())
        except DataError as error:  # present but not the pinned file
            raise ValueError(str(error)) from None

    @property
    def context_dim(self) -> int:
        return self.pca_components


class ClusteredUsersEnvConfig(_EnvBase):
    """FCLUB §6.2: n users in m true clusters on L local servers; a random user and K fresh items per round."""

    kind: Literal["clustered_users"]
    construction: Literal["paper", "reference"] = Field(
        "paper", description="paper: orthonormal θ, Gaussian noise; reference: θᵀx in [0, 1], Bernoulli rewards"
    )
    n_users: int = Field(40, ge=1, le=1_000_000)
    n_clusters: int = Field(4, ge=1)
    n_servers: int = Field(5, ge=1, description="local servers; users are split over them in index blocks")
    dim: int = Field(10, ge=2, le=10_000)
    n_arms: int = Field(10, ge=2, le=100_000)
    noise_std: float = Field(0.1, ge=0, description="reward noise of the paper construction")
    assignment: Literal["blocks", "random"] = "blocks"
    per_arm_contexts: ClassVar[bool] = True
    has_users: ClassVar[bool] = True

    @model_validator(mode="after")
    def _sizes(self) -> ClusteredUsersEnvConfig:
        if self.n_clusters > self.n_users:
            raise ValueError(f"n_clusters: must be <= n_users = {self.n_users} (got {self.n_clusters})")
        if self.n_servers > self.n_users:
            raise ValueError(f"n_servers: must be <= n_users = {self.n_users} (got {self.n_servers})")
        if self.construction == "paper" and self.n_clusters > self.dim:
            raise ValueError(
                f"n_clusters: the paper construction needs n_clusters <= dim = {self.dim} "
                f"(orthonormal θ) (got {self.n_clusters})"
            )
        return self

    @property
    def context_dim(self) -> int:
        return self.dim

    @property
    def binary_rewards(self) -> bool:
        return self.construction == "reference"


_POOL_FILES = {"movielens": "ml_500user_500item.npy", "reference_vectors": "ml_1000user_d10.npy"}


class PooledUsersEnvConfig(_EnvBase):
    """FCLUB §6.2 real-data setting: users drawn from MovieLens preference vectors, random items, Bernoulli rewards."""

    kind: Literal["pooled_users"]
    source: Literal["movielens", "reference_vectors"] = Field(
        "movielens",
        description="movielens: θ from a user × item 0/1 matrix (SVD + k-means); reference_vectors: the "
        "reference code's per-user vectors (N, dim)",
    )
    path: str | None = Field(
        None, validate_default=True, description="the .npy file (default: ../shared/data/fclub/<the source's file>)"
    )
    n_users: int = Field(40, ge=1)
    n_clusters: int = Field(4, ge=1, description="k-means clusters of the movielens source")
    n_servers: int = Field(5, ge=1, description="local servers; users are split over them in index blocks")
    dim: int = Field(10, ge=2, le=1000)
    n_arms: int = Field(10, ge=2, le=100_000)
    draw: bool | None = Field(None, description="draw users per seed (default: yes for movielens, no for the vectors)")
    per_arm_contexts: ClassVar[bool] = True
    has_users: ClassVar[bool] = True
    data_paths: ClassVar[tuple[str, ...]] = ("path",)

    @field_validator("path")
    @classmethod
    def _file(cls, value: str | None, info) -> str:
        if value is None:
            source = info.data.get("source", "movielens")
            default = _shared("fclub", _POOL_FILES.get(source, _POOL_FILES["movielens"]))
            if not default.is_file():
                raise ValueError(f"no such file: {str(default)!r} (the default of source {source!r}); give path")
            return str(default)
        return existing_path(value, "file")

    @model_validator(mode="after")
    def _sizes(self) -> PooledUsersEnvConfig:
        if self.n_servers > self.n_users:
            raise ValueError(f"n_servers: must be <= n_users = {self.n_users} (got {self.n_servers})")
        assert self.path is not None, "filled in by _file"
        import numpy as np

        try:
            shape = np.load(self.path, mmap_mode="r", allow_pickle=False).shape
        except (OSError, ValueError) as error:
            raise ValueError(f"path: {self.path!r} is not a .npy array ({error})") from None
        if len(shape) != 2:
            raise ValueError(f"path: {self.path!r} must hold a 2-D array, not shape {shape}")
        if self.n_users > shape[0]:
            raise ValueError(f"n_users: must be <= the {shape[0]} users of {Path(self.path).name} (got {self.n_users})")
        if self.source == "reference_vectors" and self.dim != shape[1]:
            raise ValueError(f"dim: must be {shape[1]}, the dimension of {Path(self.path).name} (got {self.dim})")
        if self.source == "movielens" and self.dim > min(shape) + 1:
            raise ValueError(f"dim: must be <= {min(shape) + 1} for a {shape[0]} × {shape[1]} matrix (got {self.dim})")
        if self.source == "movielens" and self.n_clusters > shape[0]:
            raise ValueError(f"n_clusters: must be <= the {shape[0]} users of the matrix (got {self.n_clusters})")
        return self

    @property
    def context_dim(self) -> int:
        return self.dim


class KMeansArmsEnvConfig(_EnvBase):
    """MPC paper §6.2: arms are k-means clusters of digits or MNIST; arm a pays 1 w.p. exp(−‖x − c_a‖²/(2σ))."""

    kind: Literal["kmeans_arms"]
    data: Literal["digits", "mnist"] = "digits"
    path: str | None = Field(None, description="MNIST IDX folder (data = 'mnist' only)")
    pca_components: int = Field(20, ge=1, le=784)
    n_arms: int = Field(10, ge=2, le=1000, description="K, the number of k-means clusters")
    bandwidth: float = Field(0.5, gt=0, description="σ (the paper's 1/2)")
    kmeans_seed: int = Field(0, ge=0)
    data_paths: ClassVar[tuple[str, ...]] = ("path",)

    @field_validator("path")
    @classmethod
    def _folder(cls, value: str | None) -> str | None:
        return None if value is None else MNISTEnvConfig._idx_folder(value)

    @model_validator(mode="after")
    def _data_path(self) -> KMeansArmsEnvConfig:
        if (self.data == "mnist") != (self.path is not None):
            raise ValueError("path: give the MNIST IDX folder exactly when data = 'mnist'")
        if self.data == "digits" and self.pca_components > 64:
            raise ValueError(f"pca_components: must be <= 64 for digits (got {self.pca_components})")
        return self

    @property
    def context_dim(self) -> int:
        return self.pca_components


class MultiLabelEnvConfig(_EnvBase):
    """MediaMill or TMC2007-500 (ARFF files, or a stand-in) as a classification bandit: reward 1 on a true label."""

    kind: Literal["multilabel"]
    dataset: Literal["mediamill", "tmc2007_500"] = "tmc2007_500"
    paths: Annotated[list[str] | None, Listed] = Field(
        None, description="the ARFF file(s); none: a generated stand-in of the same shape"
    )
    label_location: Literal["end", "start"] = "end"
    stand_in_seed: int = Field(0, ge=0)
    n_actions: int = Field(20, ge=2, le=101)
    dim: int = Field(20, ge=1, le=500)
    order: Literal["shuffle", "sample"] = "shuffle"
    data_paths: ClassVar[tuple[str, ...]] = ("paths",)

    @field_validator("paths")
    @classmethod
    def _files(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and not value:
            raise ValueError("must name at least one ARFF file, or be left out for the stand-in")
        return None if value is None else [existing_path(path, "file") for path in value]

    @property
    def context_dim(self) -> int:
        return self.dim


class MultiLabelPopulationEnvConfig(_EnvBase):
    """P2B §5.3: MediaMill or TMC2007-500 rows cut into users with t = horizon interactions each (a population)."""

    kind: Literal["multilabel_population"]
    dataset: Literal["mediamill", "tmc2007_500"] = "tmc2007_500"
    paths: Annotated[list[str] | None, Listed] = Field(
        None, description="the ARFF file(s); none: a generated stand-in of the same shape"
    )
    label_location: Literal["end", "start"] = "end"
    stand_in_seed: int = Field(0, ge=0)
    n_users: int | None = Field(None, ge=2, description="U (none: the reference's 425 MediaMill, 275 TMC)")
    n_actions: int = Field(20, ge=2, le=101)
    dim: int = Field(20, ge=2, le=500)
    decimals: int | None = Field(1, ge=0, le=9, description="q, the context precision")
    shuffle_seed: int | None = Field(0, ge=0, description="one shuffle of the rows (none: the file order)")
    population: ClassVar[bool] = True
    data_paths: ClassVar[tuple[str, ...]] = ("paths",)

    # the function itself, validated again here; mypy types a classmethod read from its class as a bound method
    _files = field_validator("paths")(MultiLabelEnvConfig._files.__func__)  # type: ignore[attr-defined]

    @property
    def users(self) -> int:
        from privbandits.datasets.multilabel import DATASETS

        return self.n_users if self.n_users is not None else DATASETS[self.dataset].n_users

    @property
    def context_dim(self) -> int:
        return self.dim


class OBDReplayEnvConfig(_EnvBase):
    """Replay (Li et al. 2010) of the Open Bandit Dataset's uniform log; vertical contexts (items | users ⊗ items).

    A round is one logged event; it counts only when the policy picks the logged item
    (then its click is the reward and the policy learns). Reports give the matched
    rounds and the CTR; no pseudo-regret (the expected rewards are unknown).
    """

    kind: Literal["obd_replay"]
    path: str | None = Field(
        None, validate_default=True, description="campaign folder (all.csv, item_context.csv); default: the OBD sample"
    )
    position: int | None = Field(None, ge=1, description="keep one slot only (none: every slot)")
    min_category_share: float = Field(0.01, ge=0, lt=1)
    descriptor: Annotated[list[str], Listed] = Field(
        ["item_feature_3"], min_length=1, description="item features crossed with users"
    )
    order: Literal["shuffle", "logged"] = "shuffle"
    allow_nonuniform: bool = False
    per_arm_contexts: ClassVar[bool] = True
    replay: ClassVar[bool] = True
    data_paths: ClassVar[tuple[str, ...]] = ("path",)

    @field_validator("path")
    @classmethod
    def _folder(cls, value: str | None) -> str:
        if value is None:  # the sample: the offline data's, else the data cache's
            from privbandits.datasets.cache import DataNotFoundError
            from privbandits.datasets.obd import default_obd_path, missing_sample

            default = default_obd_path()
            if default is None:  # not a ValueError: pydantic lets it through, one line naming the fetch command
                raise DataNotFoundError(missing_sample())
            return str(default)
        folder = existing_path(value, "folder")
        for name in ("all.csv", "item_context.csv"):
            if not (Path(folder) / name).is_file():
                raise ValueError(f"folder {value!r} has no {name} (an OBD campaign folder)")
        return folder

    @model_validator(mode="after")
    def _loads(self) -> OBDReplayEnvConfig:
        try:
            self.shape()
        except (OSError, ValueError) as error:
            raise ValueError(f"path: cannot use the log: {error}") from None
        return self

    def shape(self) -> tuple[int, tuple[int, ...]]:
        """(logged events, partition of the context) of the log (loaded once per process)."""
        from privbandits.experiments.sources import obd_log

        data, contexts = obd_log(self)
        return data.n_events, contexts.partition

    @property
    def partition(self) -> tuple[int, ...]:
        """Feature blocks (active party, passive party)."""
        return self.shape()[1]

    @property
    def context_dim(self) -> int:
        return sum(self.partition)


class LoggedReplayEnvConfig(_EnvBase):
    """Replay (Li et al. 2010) of your own uniformly-random log from an .npz file (features, actions, rewards).

    The file holds ``user_features`` (n, d_u), ``item_features`` (K, d_i), ``actions`` (n,),
    ``rewards`` (n,) and optionally ``propensities`` and ``positions`` (n,). ``layout``
    ``"per_arm"`` gives every arm the context ``[item | vec(item ⊗ user)]`` (shared-θ
    models; the item block first, partition (d_i, d_i·d_u)); ``"per_round"`` gives the
    user's features as one context per round (disjoint per-arm models).
    """

    kind: Literal["logged_replay"]
    path: str = Field(description="the .npz log")
    layout: Literal["per_arm", "per_round"] = "per_arm"
    order: Literal["shuffle", "logged"] = "shuffle"
    allow_nonuniform: bool = False
    replay: ClassVar[bool] = True
    data_paths: ClassVar[tuple[str, ...]] = ("path",)

    @field_validator("path")
    @classmethod
    def _file(cls, value: str) -> str:
        return existing_path(value, "file")

    @model_validator(mode="after")
    def _loads(self) -> LoggedReplayEnvConfig:
        try:
            self.shape()
        except (OSError, ValueError, KeyError) as error:
            raise ValueError(f"path: cannot use the log: {error}") from None
        return self

    def shape(self) -> tuple[int, tuple[int, ...]]:
        """(logged events, partition of the context) of the log (loaded once per process)."""
        from privbandits.experiments.sources import logged_npz

        data, contexts = logged_npz(self)
        return data.n_events, contexts.partition

    @property
    def per_arm_contexts(self) -> bool:  # type: ignore[override]
        return self.layout == "per_arm"

    @property
    def partition(self) -> tuple[int, ...]:
        """Feature blocks: (item, item ⊗ user) per arm, or (user,) per round."""
        return self.shape()[1]

    @property
    def context_dim(self) -> int:
        return sum(self.partition)


class P2BSyntheticEnvConfig(_EnvBase):
    """P2B §5.2: a population of users with t interactions each (t = the horizon), contexts on the simplex."""

    kind: Literal["p2b_synthetic"]
    n_users: int = Field(1000, ge=2, le=10_000_000, description="users in all (early and late)")
    dim: int = Field(10, ge=2, le=100)
    n_actions: int = Field(10, ge=2, le=10_000)
    mapping: Literal["softmax", "linear"] = "softmax"
    contexts: Literal["uniform_normalised", "dirichlet"] = "uniform_normalised"
    decimals: int | None = Field(None, ge=0, le=9)
    beta: float = Field(0.1, gt=0)
    noise_std: float | None = Field(None, ge=0, description="none: 0.1 for softmax, 0.01 for linear")
    data_seed: int | None = Field(None, ge=0, description="seed of W and the users (none: the run's seed)")
    population: ClassVar[bool] = True

    @property
    def users(self) -> int:
        return self.n_users

    @property
    def context_dim(self) -> int:
        return self.dim


ENVIRONMENT_CONFIGS = (
    LinearGaussianEnvConfig,
    DigitsEnvConfig,
    MNISTEnvConfig,
    MNIST5kEnvConfig,
    ClusteredUsersEnvConfig,
    PooledUsersEnvConfig,
    KMeansArmsEnvConfig,
    MultiLabelEnvConfig,
    OBDReplayEnvConfig,
    LoggedReplayEnvConfig,
    P2BSyntheticEnvConfig,
    MultiLabelPopulationEnvConfig,
)
EnvConfig = Annotated[
    LinearGaussianEnvConfig
    | DigitsEnvConfig
    | MNISTEnvConfig
    | MNIST5kEnvConfig
    | ClusteredUsersEnvConfig
    | PooledUsersEnvConfig
    | KMeansArmsEnvConfig
    | MultiLabelEnvConfig
    | OBDReplayEnvConfig
    | LoggedReplayEnvConfig
    | P2BSyntheticEnvConfig
    | MultiLabelPopulationEnvConfig,
    Field(discriminator="kind"),
]
