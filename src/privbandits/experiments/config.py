"""Experiment configs: TOML files validated by a pydantic schema.

A config names one environment, several policies (learners or protocols) and a
list of seeds; every (policy, seed) pair is one run. Every environment and every
policy is a model tagged by its ``kind``, usable from TOML and from Python
(``LinUCBConfig(kind="linucb", alpha=0.5)``). Validation errors name the
offending key, the allowed values and the value given, e.g.
``policies[1].alpha: must be >= 0 (got -1)``; a policy paired with an environment
it cannot run on is refused, saying why.

Values are strict: booleans are not numbers, ``dim = 10.0`` is not an integer,
reals must be finite (integers are accepted for reals). A data-file field is
checked to exist at validation and enters the run spec as its path and content
hash (:func:`~privbandits.experiments.tasks.file_identity`), so a changed file is
a different unit of the results store.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)

from privbandits.experiments.noise_key import noise_key
from privbandits.experiments.tomlfile import read_toml
from privbandits.linear.defaults import DEFAULT_REFRESH_EVERY, DEFAULT_TIE_TOLERANCE


class ConfigError(ValueError):
    """A config file that cannot be used; the message lists every problem."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


def _listed(value: Any) -> Any:
    """A tuple as a list: strict list fields still take Python tuples (``seeds=(0, 1)``)."""
    return list(value) if isinstance(value, tuple) else value


Listed = BeforeValidator(_listed)


# -- data files -----------------------------------------------------------------
def _shared(*parts: str) -> Path:
    """``parts`` in the offline data (:func:`~privbandits.datasets.cache.shared_data_dir`), named even if absent."""
    from privbandits.datasets.cache import SHARED_ENV, shared_data_dir  # not at import: the command line stays light

    return (shared_data_dir() or Path(f"${SHARED_ENV}")).joinpath(*parts)


def existing_path(value: str, what: str = "file or folder") -> str:
    """``value`` as an absolute path; ValueError naming it when nothing is there."""
    if not value:
        raise ValueError(f"must name a {what} (got '')")
    path = Path(value).expanduser()
    if what == "folder" and not path.is_dir() or what == "file" and not path.is_file() or not path.exists():
        raise ValueError(f"no such {what}: {value!r}")
    return str(path.resolve())


# -- environments -------------------------------------------------------------
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

    _files = field_validator("paths")(MultiLabelEnvConfig._files.__func__)

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
        if value is None:
            default = _shared("obd", "random", "all")
            if not default.is_dir():
                raise ValueError(f"no such folder: {str(default)!r} (the default OBD sample); give path")
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


# -- policies -----------------------------------------------------------------
class _Labelled(_Strict):
    label: str | None = Field(None, min_length=1, max_length=80)
    needs: ClassVar[str] = "stream"
    """What the policy plays on: 'stream' (contexts), 'users' (user + items) or 'population'."""
    LATER: ClassVar[dict[str, object]] = {}
    """Fields added after runs were stored, with their defaults: a run spec holds each only when it differs, so
    the runs stored before keep their keys; at its default each computes what it computed then."""

    @model_serializer(mode="wrap")
    def _without_later_defaults(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        for name, default in self.LATER.items():
            if data.get(name) == default:
                del data[name]
        return data

    @property
    def display_label(self) -> str:
        return self.label or self.kind


class _PolicyBase(_Labelled):
    visible_features: int | None = Field(None, ge=1)


class _LinearPolicyBase(_PolicyBase):
    reg: float = Field(1.0, gt=0)
    refresh_every: int = Field(DEFAULT_REFRESH_EVERY, ge=0)
    tie_break: Literal["lowest", "random"] = "lowest"
    tie_tolerance: float = Field(DEFAULT_TIE_TOLERANCE, ge=0, le=1)


class LinUCBConfig(_LinearPolicyBase):
    """LinUCB (Li et al. 2010): ridge estimate + alpha × confidence width."""

    kind: Literal["linucb"]
    layout: Literal["shared", "disjoint"] = "shared"
    alpha: float = Field(1.0, ge=0)


class LinTSConfig(_LinearPolicyBase):
    """Linear Thompson sampling (Agrawal & Goyal 2013): μ ~ N(θ̂, v² A⁻¹)."""

    kind: Literal["lints"]
    layout: Literal["shared", "disjoint"] = "shared"
    v: float = Field(0.01, ge=0)
    sampler: Literal["cholesky", "eigh"] = "cholesky"


class EpsilonGreedyConfig(_LinearPolicyBase):
    """ε-greedy on ridge estimates (the MPC paper's learner, Alg. 1)."""

    kind: Literal["epsilon_greedy"]
    layout: Literal["shared", "disjoint"] = "disjoint"
    epsilon: float = Field(0.1, ge=0, le=1)


class _VerticalBase(_Strict):
    """Fields shared by the vertical federated protocols (spec ``vertical-o3m.md``)."""

    partition: Annotated[list[Annotated[int, Field(ge=1)]], Listed] = Field(min_length=2)
    mask_source: Literal["seeded", "os"] = "seeded"
    secure_aggregation: bool = False

    @field_validator("visible_features", check_fields=False)
    @classmethod
    def _all_features(cls, value: int | None) -> int | None:
        if value is not None:
            raise ValueError(
                "not used by vertical protocols (every party's block is used); for a partial "
                "baseline use kind 'linucb' or 'lints' with visible_features"
            )
        return value

    @model_validator(mode="after")
    def _enough_parties(self):
        if self.secure_aggregation and len(self.partition) < 3:
            raise ValueError("secure_aggregation needs at least 2 passive parties (3 or more partition blocks)")
        return self


class VerticalLinUCBConfig(_VerticalBase, LinUCBConfig):
    """VFUCB: LinUCB at the active party on O3M-masked contexts from all parties (lossless)."""

    kind: Literal["vfucb"]
    layout: Literal["shared"] = "shared"


class VerticalLinTSConfig(_VerticalBase, LinTSConfig):
    """VFTS: LinTS at the active party on O3M-masked contexts (same distribution as LinTS)."""

    kind: Literal["vfts"]
    layout: Literal["shared"] = "shared"


class RandomPolicyConfig(_PolicyBase):
    """A uniformly random arm every round (baseline)."""

    kind: Literal["random"]


_FCLUB_OPTION = "None = the preset's value"


class FCLUBPolicyConfig(_Labelled):
    """FCLUB (Liu et al. 2022): CDP-FCLUB-DC and variants on local servers + a global server; every FCLUBConfig option.

    ``variant`` and ``preset`` give the starting options (``preset = "reference"``: the
    reference code's behaviour, ``FCLUBConfig.reference_compatible``); every other field
    left out keeps the preset's value. The horizon is the experiment's.
    """

    kind: Literal["fclub"]
    variant: Literal["cdp-fclub-dc", "fclub-dc", "fclub", "homo-dc", "homo"] = "cdp-fclub-dc"
    preset: Literal["paper", "reference"] = "paper"
    private: bool | None = None
    synchronous: bool | None = None
    detect_clusters: bool | None = None
    detect_every_round: bool | None = None
    epsilon: float | None = Field(None, gt=0)
    delta: float | None = Field(None, gt=0, lt=1)
    upload_threshold: float | None = Field(None, gt=1)
    download_threshold: float | None = Field(None, gt=1)
    alpha: float | None = Field(None, gt=0, lt=1, description="confidence α (None: 1/(8T))")
    alpha1: float | None = Field(None, gt=0)
    alpha2: float | None = Field(None, gt=0)
    ridge: float | None = Field(None, gt=0)
    sigma0: float | None = Field(None, ge=0)
    m_bound: int | None = Field(None, ge=1, description="m in the logs (None: the number of users)")
    lambda_x: float | None = Field(None, gt=0, le=1)
    noise_variance: Literal["squared_log", "algorithm5", "reference_std", "analytic"] | None = None
    rho_formula: Literal["eq7", "appendix_b1", "consistent"] | None = None
    rho_constant: float | None = Field(None, gt=0)
    tree_depth: Literal["horizon", "theory", "reference"] | None = None
    lifecycle: Literal["persistent", "reset_every_phase"] | None = None
    recommendation: Literal["synchronized", "with_own_buffer"] | None = None
    beta_form: Literal["lemma1", "reference"] | None = None
    beta_scale: float | None = Field(None, ge=0)
    thresholds: Literal["practical", "theoretical"] | None = None
    noise_in_trigger_only: bool | None = None
    reference_h_column: bool | None = None
    skip_unseen_users: bool | None = None
    merge_same_server: bool | None = None
    merge_rule: Literal["components", "reference"] | None = None
    shared_statistics_defect: bool | None = Field(None, description="the reference code's double count (issue 15)")
    rebuild_local_copies: bool | None = None
    renew_every_phase: bool | None = None
    ridge_in_recommendation_only: bool | None = Field(None, description="the reference Homo-DC's ridge (issue 29)")
    carry_synchronized_copies: bool | None = Field(None, description="the reference Homo-DC's renewal (issue 29)")
    pd_repair: Literal["clip", "shift"] | None = None
    refresh_every: int | None = Field(None, ge=0)
    tie_break: Literal["lowest", "random"] | None = None
    needs: ClassVar[str] = "users"

    _PRESET_FIELDS: ClassVar[tuple[str, ...]] = ("kind", "label", "variant", "preset")

    def overrides(self) -> dict[str, Any]:
        """The FCLUBConfig options set here (those left out keep the preset's)."""
        return {name: value for name, value in self.model_dump().items()
                if name not in self._PRESET_FIELDS and value is not None}  # fmt: skip

    def protocol_config(self, horizon: int):
        """The :class:`~privbandits.protocols.fclub_config.FCLUBConfig` of a run of ``horizon`` rounds."""
        from privbandits.protocols.fclub_config import FCLUBConfig

        options = {**self.overrides(), "horizon": horizon}
        if self.preset == "reference":
            return FCLUBConfig.reference_compatible(self.variant, **options)
        return FCLUBConfig.for_variant(self.variant, **options)

    @model_validator(mode="after")
    def _consistent(self) -> FCLUBPolicyConfig:
        try:
            self.protocol_config(1)
        except ValueError as error:
            raise ValueError(str(error)) from None
        return self


class _LocalBaselineBase(_Labelled):
    ridge: float = Field(2.0, gt=0)
    beta_scale: float = Field(0.5, ge=0)
    beta_a: float | None = Field(None, gt=0, description="a in β = scale·√(2 ln(2/a) + d ln(3 + t/d)); None: reference")
    tie_break: Literal["lowest", "random"] = "lowest"
    needs: ClassVar[str] = "users"
    baseline: ClassVar[str]

    def protocol_config(self, horizon: int):
        """The :class:`~privbandits.protocols.fclub_baselines.BaselineConfig` of a run."""
        from privbandits.protocols.fclub_baselines import BaselineConfig

        options = self.model_dump(exclude={"kind", "label"})
        return BaselineConfig(kind=self.baseline, horizon=horizon, **options)


class CLUBConfig(_LocalBaselineBase):
    """CLUB (Gentile et al. 2014) on each local server's users: edge deletion on a user graph; nothing is sent."""

    kind: Literal["club"]
    alpha_club: float = Field(0.25, gt=0)
    baseline: ClassVar[str] = "club"


class SCLUBConfig(_LocalBaselineBase):
    """SCLUB (Li et al. 2019) on each local server's users: stage-wise split and merge of clusters; nothing is sent."""

    kind: Literal["sclub"]
    alpha_sclub: float = Field(1.5, gt=0)
    alpha_frequency: float = Field(1.0, gt=0)
    baseline: ClassVar[str] = "sclub"


class UserLinUCBConfig(_LocalBaselineBase):
    """LinUCB per user (OFUL): every user is its own cluster; nothing is sent."""

    kind: Literal["user_linucb"]
    baseline: ClassVar[str] = "linucb"


class PlaintextMPCEpsilonGreedyConfig(_Labelled):
    """The float64 twin of the private ε-greedy learner: same exploration draws, per-arm ridge (λ = 1)."""

    kind: Literal["plaintext_mpc_epsilon_greedy"]
    epsilon: float = Field(0.01, ge=0, le=1)
    precision: int = Field(20, ge=1, le=26, description="L: the grid of the exploration uniforms (as the private one)")

    def protocol_config(self, n_arms: int, dim: int):
        from privbandits.protocols.mpc_bandit import MPCBanditConfig

        return MPCBanditConfig(n_arms=n_arms, partition=(dim, 0), epsilon=self.epsilon, precision=self.precision)


class MPCEpsilonGreedyConfig(PlaintextMPCEpsilonGreedyConfig):
    """The MPC paper's private ε-greedy learner (Alg. 1): per-arm ridge statistics secret-shared among the parties."""

    kind: Literal["mpc_epsilon_greedy"]
    partition: Annotated[list[Annotated[int, Field(ge=0)]] | None, Listed] = Field(
        None, min_length=2, description="features per computing party (None: two parties, halves)"
    )
    nr_iterations: int = Field(7, ge=0, le=50)
    truncation: Literal["auto", "local", "wraps", "exact"] = "auto"
    truncation_rounding: Literal["unbiased"] = Field("unbiased", description="truncations round without bias")
    puller: str = Field("puller", min_length=1)
    rewarder: str = Field("rewarder", min_length=1)
    binary_rewards: bool = True
    mask_encoding: Literal["integer", "fixed_point"] = "integer"
    reciprocal_start: Literal["exp", "linear"] = Field(
        "exp", description="the reciprocal's start: the paper's exp (8 rounds) or linear (no round; use 3 iterations)"
    )
    overlap_reciprocal: bool = Field(False, description="1/d rides on the argmax's openings (2 parties)")
    mask_factors: bool = Field(False, description="the one-hot masks the updates' factors (with overlap_reciprocal)")
    allmax_lookup: bool = Field(False, description="the argmax ends in one masked lookup")
    lookup_comparison: bool = Field(False, description="comparisons by table lookups (with allmax_lookup, 2 parties)")
    goldschmidt: bool = Field(False, description="u/d by Goldschmidt's iteration")
    dealt_exploration: bool = Field(False, description="the dealer deals the exploring arm (with allmax_lookup)")
    fused_input: bool = Field(False, description="the context enters in the round of u = W^-1 x")

    LATER: ClassVar[dict[str, object]] = {
        "reciprocal_start": "exp",
        **dict.fromkeys(("overlap_reciprocal", "mask_factors", "allmax_lookup", "lookup_comparison", "goldschmidt",
                         "dealt_exploration", "fused_input"), False),
    }  # fmt: skip
    """The protocol's options added after runs were stored
    (:data:`~privbandits.protocols.mpc_bandit.LATER_OPTIONS`) and the reciprocal's start."""

    def parties(self, dim: int) -> tuple[int, ...]:
        return tuple(self.partition) if self.partition is not None else ((dim + 1) // 2, dim // 2)

    @model_validator(mode="after")
    def _consistent(self) -> MPCEpsilonGreedyConfig:
        from privbandits.protocols.mpc_bandit import (  # the protocol's rules
            dealt_exploration_problem,
            lookup_comparison_problem,
            mask_factors_problem,
            overlap_problem,
        )

        if self.partition is not None and sum(self.partition) < 1:
            raise ValueError("partition: at least one feature in all")
        if self.truncation == "local" and self.partition is not None and len(self.partition) != 2:
            raise ValueError(f"truncation: 'local' is for 2 parties (got {len(self.partition)}); use another")
        parties = 2 if self.partition is None else len(self.partition)
        problem = (
            overlap_problem(self.overlap_reciprocal, parties, self.truncation)
            or mask_factors_problem(self.mask_factors, self.overlap_reciprocal, self.mask_encoding)
            or lookup_comparison_problem(self.lookup_comparison, parties, self.allmax_lookup)
            or dealt_exploration_problem(self.dealt_exploration, self.allmax_lookup)
        )
        if problem:
            raise ValueError(problem)
        return self

    def protocol_config(self, n_arms: int, dim: int):
        from privbandits.protocols.mpc_bandit import MPCBanditConfig

        options = self.model_dump(exclude={"kind", "label", "partition"})
        return MPCBanditConfig(n_arms=n_arms, partition=self.parties(dim), **options)


class P2BPolicyConfig(_Labelled):
    """P2B (Malekzadeh et al. 2020): early users share codes through a thresholding shuffler; late users warm-start.

    Encoder: ``n_codes`` k-means cells of the q = ``precision`` simplex grid (cached on disk).
    Shuffler: ``participation``, ``threshold`` (crowd blending), ``omega`` (δ proxy).
    Server and agents: ``alpha``, ``representation``, ``shared_warm_agent``, ``tie_break``.
    A run reports the mean reward of late users cold, warm non-private and warm private.
    """

    kind: Literal["p2b"]
    n_codes: int = Field(1024, ge=2, le=1_000_000, description="encoder: k, the number of codes")
    precision: int = Field(1, ge=1, le=9, description="encoder: q, decimals of the simplex grid")
    encoder_seed: int = Field(0, ge=0, description="encoder: k-means seed")
    participation: float = Field(0.5, ge=0, le=1, description="shuffler: p, probability a user shares")
    threshold: int = Field(10, ge=1, description="shuffler: crowd-blending threshold l")
    omega: float | None = Field(None, gt=0, description="shuffler: ω of the δ proxy (Eq. 3)")
    negative_rate: float = Field(0.05, ge=0, le=1, description="devices: probability of a zero-reward report")
    early_fraction: float = Field(0.7, gt=0, lt=1)
    alpha: float = Field(1.0, ge=0, description="agents: LinUCB α")
    representation: Literal["one_hot", "scalar_code"] = "one_hot"
    shared_warm_agent: bool = False
    tie_break: Literal["random", "lowest"] = "random"
    needs: ClassVar[str] = "population"

    def protocol_config(self):
        from privbandits.protocols.p2b import P2BConfig

        return P2BConfig(
            participation=self.participation,
            negative_rate=self.negative_rate,
            threshold=self.threshold,
            alpha=self.alpha,
            early_fraction=self.early_fraction,
            representation=self.representation,
            shared_warm_agent=self.shared_warm_agent,
            tie_break=self.tie_break,
            omega=self.omega,
        )


class _DPLinUCBBase(_Labelled):
    """Fields shared by the DP LinUCB baselines (:mod:`privbandits.protocols.dp`); the horizon is the experiment's."""

    epsilon: float = Field(1.0, gt=0, description="the privacy ε")
    delta: float = Field(1e-5, gt=0, lt=1, description="the privacy δ")
    alpha: float = Field(1.0, ge=0, description="LinUCB width multiplier")
    reg: float = Field(1.0, gt=0, description="ridge λ (before the paper's shift)")
    failure_probability: float | None = Field(None, gt=0, lt=1, description="α of the noise bound Υ (None: 1/T)")
    shift_regularizer: bool = Field(True, description="add the paper's 2Υ to the regulariser")
    tie_break: Literal["lowest", "random"] = "lowest"
    tie_tolerance: float = Field(DEFAULT_TIE_TOLERANCE, ge=0, le=1)
    calibration: Literal["paper", "analytic"] = Field(
        "paper", description="noise σ from the paper's formula, or the analytic Gaussian (tight, Balle & Wang 2018)"
    )
    LATER: ClassVar[dict[str, object]] = {"calibration": "paper"}
    per_arm_only: ClassVar[bool] = True
    """One shared θ over one context per arm: refused on environments with one context per round."""

    def policy_options(self) -> dict[str, Any]:
        """Keyword arguments of the learner class (besides n_arms, dim, horizon and rng)."""
        return self.model_dump(exclude={"kind", "label"})


class JointDPLinUCBConfig(_DPLinUCBBase):
    """Joint-DP LinUCB (Shariff & Sheffet 2018): the Gram matrix and Σ r·x through the tree-based mechanism."""

    kind: Literal["joint_dp_linucb"]


class LocalDPLinUCBConfig(_DPLinUCBBase):
    """Local-DP LinUCB (Zheng et al. 2020): each user sends x xᵀ and r·x with Gaussian noise."""

    kind: Literal["local_dp_linucb"]


class ShuffleDPLinUCBConfig(_DPLinUCBBase):
    """Shuffle-model LinUCB (Chowdhury & Zhou 2022): batches of local reports through a trusted shuffler."""

    kind: Literal["shuffle_dp_linucb"]
    batch_size: int = Field(100, ge=1, description="users per shuffled batch (the model is fixed within one)")


POLICY_CONFIGS = (
    LinUCBConfig,
    LinTSConfig,
    EpsilonGreedyConfig,
    VerticalLinUCBConfig,
    VerticalLinTSConfig,
    RandomPolicyConfig,
    FCLUBPolicyConfig,
    CLUBConfig,
    SCLUBConfig,
    UserLinUCBConfig,
    MPCEpsilonGreedyConfig,
    PlaintextMPCEpsilonGreedyConfig,
    P2BPolicyConfig,
    JointDPLinUCBConfig,
    LocalDPLinUCBConfig,
    ShuffleDPLinUCBConfig,
)
PolicyConfig = Annotated[
    LinUCBConfig
    | LinTSConfig
    | EpsilonGreedyConfig
    | VerticalLinUCBConfig
    | VerticalLinTSConfig
    | RandomPolicyConfig
    | FCLUBPolicyConfig
    | CLUBConfig
    | SCLUBConfig
    | UserLinUCBConfig
    | MPCEpsilonGreedyConfig
    | PlaintextMPCEpsilonGreedyConfig
    | P2BPolicyConfig
    | JointDPLinUCBConfig
    | LocalDPLinUCBConfig
    | ShuffleDPLinUCBConfig,
    Field(discriminator="kind"),
]


def incompatibility(env: Any, policy: Any) -> str | None:
    """Why ``policy`` cannot run on ``env`` (one phrase), or None when it can."""
    name = repr(env.kind)
    if policy.needs == "population":
        if not env.population:
            return (
                f"kind {policy.kind!r} is a population protocol and needs a population environment "
                f"(e.g. 'p2b_synthetic'), not {name}"
            )
        return None
    if env.population:
        return f"environment {name} is a population (P2B); only kind 'p2b' runs on it, not {policy.kind!r}"
    if policy.needs == "users" and not env.has_users:
        return (
            f"kind {policy.kind!r} serves users on local servers and needs an environment with users "
            f"('clustered_users' or 'pooled_users'), not {name}"
        )
    if getattr(policy, "per_arm_only", False) and not env.per_arm_contexts:
        return (
            f"kind {policy.kind!r} keeps one θ over one context per arm; environment {name} gives one context per round"
        )
    if isinstance(policy, PlaintextMPCEpsilonGreedyConfig):
        if env.per_arm_contexts:
            return (
                f"kind {policy.kind!r} keeps one model per arm on one context per round; "
                f"environment {name} gives one context per arm"
            )
        if env.replay:
            return (
                f"kind {policy.kind!r} learns from every round; replay needs learners that learn "
                "only from matched rounds"
            )
        if getattr(policy, "binary_rewards", False) and not env.binary_rewards:
            return f"binary_rewards is set but environment {name} has real-valued rewards; set binary_rewards = false"
    return None


def by_kind(models: tuple[type[BaseModel], ...]) -> dict[str, type[BaseModel]]:
    """Config classes keyed by their ``kind`` tag, in declaration order."""
    return {model.model_fields["kind"].annotation.__args__[0]: model for model in models}


class ExperimentConfig(_Strict):
    """A whole experiment: one environment, several policies, several seeds."""

    name: str = Field(
        pattern=r"^[a-z0-9][a-z0-9_-]*$", max_length=80, description="experiment name (lower case, digits, - and _)"
    )
    description: str = Field("", description="one line shown in listings and reports")
    horizon: int = Field(
        ge=1, le=100_000_000, description="rounds per run (population environments: interactions per user)"
    )
    seeds: Annotated[list[Annotated[int, Field(ge=0)]], Listed] = Field(
        min_length=1, description="one run per policy and seed"
    )
    series_points: int = Field(200, ge=2, le=100_000, description="points kept of each per-round series")
    environment: EnvConfig = Field(description="the problem ([environment] table; dotted keys: environment.dim=50)")
    policies: Annotated[list[PolicyConfig], Listed] = Field(
        min_length=1, description="the learners ([[policies]] tables; dotted keys: policies.0.alpha=0.5)"
    )

    @field_validator("seeds")
    @classmethod
    def _distinct_seeds(cls, seeds: list[int]) -> list[int]:
        if len(set(seeds)) != len(seeds):
            raise ValueError("must be distinct")
        return seeds

    @field_validator("policies")
    @classmethod
    def _unique_labels(cls, policies: list[Any]) -> list[Any]:
        labels = [p.display_label for p in policies]
        repeated = sorted({label for label in labels if labels.count(label) > 1})
        if repeated:
            raise ValueError(f"labels must be unique; repeated: {', '.join(repeated)} (set 'label')")
        return policies

    @model_validator(mode="after")
    def _fit_environment(self) -> ExperimentConfig:
        env = self.environment
        for i, policy in enumerate(self.policies):
            why = incompatibility(env, policy)
            if why is not None:
                raise ValueError(f"policies[{i}]: {why}")
            visible = getattr(policy, "visible_features", None)
            if visible is not None and visible > env.context_dim:
                raise ValueError(
                    f"policies[{i}].visible_features: must be <= the environment's context "
                    f"dimension {env.context_dim} (got {visible})"
                )
            partition = getattr(policy, "partition", None)
            if partition is not None and sum(partition) != env.context_dim:
                raise ValueError(
                    f"policies[{i}].partition: block sizes must sum to the environment's context "
                    f"dimension {env.context_dim} (got {sum(partition)})"
                )
            if isinstance(policy, P2BPolicyConfig):
                problem = _p2b_problem(env, policy)
                if problem is not None:
                    raise ValueError(f"policies[{i}].{problem}")
            if getattr(policy, "layout", None) == "shared" and not env.per_arm_contexts:
                raise ValueError(
                    f"policies[{i}].layout: 'shared' needs one context per arm, but environment "
                    f"{env.kind!r} gives one context per round; use 'disjoint'"
                )
        if env.replay:
            events = env.shape()[0]
            if self.horizon > events:
                raise ValueError(f"horizon: must be <= the {events} events of the replayed log (got {self.horizon})")
        return self

    def run_spec(self, policy_index: int) -> dict[str, Any]:
        """Everything that determines one policy's runs (besides the seed); data files by path and content hash."""
        return {
            "experiment": self.name,
            "policy_index": policy_index,
            "horizon": self.horizon,
            "series_points": self.series_points,
            "environment": environment_spec(self.environment),
            "policy": self.policies[policy_index].model_dump(mode="json"),
        } | noise_key(self.policies[policy_index])  # DP runs name their noise sampler (noise_key.py)


def _p2b_problem(env: Any, policy: P2BPolicyConfig) -> str | None:
    """What makes a P2B policy unusable on a population (``field: why``), or None."""
    import math

    grid = math.comb(10**policy.precision + env.context_dim - 1, env.context_dim - 1)
    if policy.n_codes > grid:
        return (
            f"n_codes: must be <= the {grid} points of the simplex grid (d = {env.context_dim}, "
            f"q = {policy.precision}) (got {policy.n_codes})"
        )
    users = env.users
    early = int(policy.early_fraction * users)
    if not 1 <= early < users:
        return (
            f"early_fraction: leaves {early} early and {users - early} late users of {users}; "
            f"both must be >= 1 (got {policy.early_fraction})"
        )
    return None


def environment_spec(environment: Any) -> dict[str, Any]:
    """The environment's fields as JSON data, each data file replaced by its ``{"path", "sha256"}`` identity."""
    from privbandits.experiments.tasks import file_identity

    data = environment.model_dump(mode="json")
    for name in environment.data_paths:
        value = data[name]
        if isinstance(value, list):
            data[name] = [file_identity(item) for item in value]
        elif value is not None:
            data[name] = file_identity(value)
    return data


def _restored(value: Any) -> Any:
    """A path back from its identity, refusing a file whose content changed since the spec was made."""
    from privbandits.experiments.tasks import file_identity

    if not isinstance(value, dict):
        return value
    now = file_identity(value["path"])
    if now["sha256"] != value["sha256"]:
        raise ConfigError(f"data file {value['path']} changed since this run was planned; plan the run again")
    return value["path"]


def environment_from_spec(data: dict[str, Any]) -> Any:
    """The environment config of a run spec (inverse of :func:`environment_spec`)."""
    from pydantic import TypeAdapter

    data = dict(data)
    model = by_kind(ENVIRONMENT_CONFIGS)[data["kind"]]
    for name in model.data_paths:
        value = data.get(name)
        data[name] = [_restored(item) for item in value] if isinstance(value, list) else _restored(value)
    return TypeAdapter(EnvConfig).validate_python(data)


def config_hash(run_spec: dict[str, Any]) -> str:
    """Stable short hash of a run spec (canonical JSON, SHA-256, 16 hex digits)."""
    canonical = json.dumps(run_spec, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


# -- loading and error messages -------------------------------------------------
_TAGS = {"environment": by_kind(ENVIRONMENT_CONFIGS), "policies": by_kind(POLICY_CONFIGS)}
_TYPE_NAMES = {
    "int": "an integer",
    "float": "a number",
    "bool": "a boolean",
    "string": "a string",
    "list": "a list",
    "dict": "a table",
    "model": "a table",
}


def _split_location(loc: tuple[Any, ...]) -> tuple[str, type[BaseModel]]:
    """Readable key path of a pydantic error and the schema class owning its last key.

    Pydantic inserts the discriminator value (e.g. ``'linucb'``) into locations
    inside tagged unions; it is dropped from the path and used to find the class.
    """
    path, model = "", ExperimentConfig
    for i, part in enumerate(loc):
        section = loc[0]
        if (
            i > 0
            and section in _TAGS
            and part in _TAGS[section]
            and (loc[i - 1] == "environment" or isinstance(loc[i - 1], int))
        ):
            model = _TAGS[section][part]
        elif isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path or "(top level)", model


def _describe(error: dict[str, Any]) -> str:
    """One line per validation problem: the key, what is allowed, what was given."""
    raw_loc = tuple(error["loc"])
    where, model = _split_location(raw_loc)
    kind, ctx, given = error["type"], error.get("ctx", {}), error.get("input")
    if kind == "extra_forbidden":
        return f"{where}: unknown key; allowed keys: {', '.join(model.model_fields)}"
    if kind == "missing":
        return f"{where}: required key is missing"
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        allowed = ", ".join(repr(tag) for tag in _TAGS[raw_loc[0]])
        got = f" (got {ctx['tag']!r})" if "tag" in ctx else " (got nothing)"
        return f"{where}.kind: must be one of {allowed}{got}"
    if kind == "literal_error":
        return f"{where}: must be one of {ctx['expected']} (got {given!r})"
    bounds = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<", "less_than_equal": "<="}
    if kind in bounds:
        return f"{where}: must be {bounds[kind]} {next(iter(ctx.values()))} (got {given!r})"
    if kind == "string_pattern_mismatch":
        return f"{where}: must match {ctx['pattern']} (got {given!r})"
    if kind == "too_short":
        return f"{where}: must have at least {ctx['min_length']} item(s) (got {ctx['actual_length']})"
    if kind == "finite_number":
        return f"{where}: must be a finite number (got {given!r})"
    if kind in ("int_from_float", "int_parsing"):
        return f"{where}: must be an integer (got {given!r})"
    type_name = kind.split("_")[0]
    if type_name in _TYPE_NAMES:
        return f"{where}: must be {_TYPE_NAMES[type_name]} (got {given!r})"
    if kind == "value_error":
        message = error["msg"].removeprefix("Value error, ")
        if not raw_loc:
            return message
        field, separator, rest = message.partition(": ")
        if separator and field in model.model_fields:  # a model validator naming one of its fields
            return f"{where}.{field}: {rest}"
        return f"{where}: {message}"
    return f"{where}: {error['msg'].lower()}"


def parse_config(data: dict[str, Any], source: str = "config") -> ExperimentConfig:
    """Validate a config mapping; raise :class:`ConfigError` listing every problem."""
    try:
        return ExperimentConfig.model_validate(data)
    except ValidationError as exc:
        problems = [_describe(e) for e in exc.errors(include_url=False)]
        raise ConfigError(f"{source} is invalid:\n  " + "\n  ".join(problems)) from None


def load_config(path: str | Path) -> ExperimentConfig:
    """Read and validate a TOML experiment config."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    return parse_config(read_toml(path, ConfigError), source=str(path))
