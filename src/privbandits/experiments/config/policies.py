"""Policy configs: one pydantic model per learner or protocol ``kind``, and the tagged union of them.

Each model declares its options (types, bounds, defaults) and, for the protocols, builds the
protocol's own configuration (``protocol_config``). ``LATER`` fields were added after runs were
stored: at their defaults they are left out of the run spec, so those runs keep their keys.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import Field, field_validator, model_serializer, model_validator

from privbandits.experiments.config.base import Listed, _Strict, declared
from privbandits.experiments.later_options import MPC_LATER_OPTIONS
from privbandits.linear.defaults import DEFAULT_TIE_TOLERANCE


class _Labelled(_Strict):
    if TYPE_CHECKING:  # each subclass's tag field (declared here for the checker only: it is no field of the base)
        kind: str
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
    reg: float = declared("LinUCB", "reg")
    refresh_every: int = declared("LinUCB", "refresh_every")
    tie_break: Literal["lowest", "random"] = declared("LinUCB", "tie_break")
    tie_tolerance: float = declared("LinUCB", "tie_tolerance", le=1)  # the learners take any tolerance >= 0


class LinUCBConfig(_LinearPolicyBase):
    """LinUCB (Li et al. 2010): ridge estimate + alpha × confidence width."""

    kind: Literal["linucb"]
    layout: Literal["shared", "disjoint"] = declared("LinUCB", "layout")
    alpha: float = declared("LinUCB", "alpha")


class LinTSConfig(_LinearPolicyBase):
    """Linear Thompson sampling (Agrawal & Goyal 2013): μ ~ N(θ̂, v² A⁻¹)."""

    kind: Literal["lints"]
    layout: Literal["shared", "disjoint"] = declared("LinTS", "layout")
    v: float = declared("LinTS", "v")
    sampler: Literal["cholesky", "eigh"] = declared("LinTS", "sampler")


class EpsilonGreedyConfig(_LinearPolicyBase):
    """ε-greedy on ridge estimates (the MPC paper's learner, Alg. 1)."""

    kind: Literal["epsilon_greedy"]
    layout: Literal["shared", "disjoint"] = declared("EpsilonGreedy", "layout")
    epsilon: float = declared("EpsilonGreedy", "epsilon")


class _VerticalBase(_Strict):
    """Fields shared by the vertical federated protocols (spec ``vertical-o3m.md``)."""

    partition: Annotated[list[Annotated[int, Field(ge=1)]], Listed] = Field(min_length=2)
    mask_source: Literal["seeded", "os"] = declared("VerticalFederatedBandit", "mask_source")
    secure_aggregation: bool = declared("VerticalFederatedBandit", "secure_aggregation")

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

    kind: Literal["vfucb"]  # type: ignore[assignment]  # its own tag: pydantic's union tells the subclass by it
    layout: Literal["shared"] = "shared"


class VerticalLinTSConfig(_VerticalBase, LinTSConfig):
    """VFTS: LinTS at the active party on O3M-masked contexts (same distribution as LinTS)."""

    kind: Literal["vfts"]  # type: ignore[assignment]  # its own tag: pydantic's union tells the subclass by it
    layout: Literal["shared"] = "shared"


class RandomPolicyConfig(_PolicyBase):
    """A uniformly random arm every round (baseline)."""

    kind: Literal["random"]


def _fclub(name: str) -> Any:
    """FCLUBConfig's option ``name`` with no default: left out (None), the variant's preset decides."""
    return declared("FCLUBConfig", name, default=None)


class FCLUBPolicyConfig(_Labelled):
    """FCLUB (Liu et al. 2022): CDP-FCLUB-DC and variants on local servers + a global server; every FCLUBConfig option.

    ``variant`` and ``preset`` give the starting options (``preset = "reference"``: the
    reference code's behaviour, ``FCLUBConfig.reference_compatible``); every other field
    left out keeps the preset's value. The horizon is the experiment's.
    """

    kind: Literal["fclub"]
    variant: Literal["cdp-fclub-dc", "fclub-dc", "fclub", "homo-dc", "homo"] = "cdp-fclub-dc"
    preset: Literal["paper", "reference"] = "paper"
    private: bool | None = _fclub("private")
    synchronous: bool | None = _fclub("synchronous")
    detect_clusters: bool | None = _fclub("detect_clusters")
    detect_every_round: bool | None = _fclub("detect_every_round")
    epsilon: float | None = _fclub("epsilon")
    delta: float | None = _fclub("delta")
    upload_threshold: float | None = _fclub("upload_threshold")
    download_threshold: float | None = _fclub("download_threshold")
    alpha: float | None = _fclub("alpha")
    alpha1: float | None = _fclub("alpha1")
    alpha2: float | None = _fclub("alpha2")
    ridge: float | None = _fclub("ridge")
    sigma0: float | None = _fclub("sigma0")
    m_bound: int | None = _fclub("m_bound")
    lambda_x: float | None = _fclub("lambda_x")
    noise_variance: Literal["squared_log", "algorithm5", "reference_std", "analytic"] | None = _fclub("noise_variance")
    rho_formula: Literal["eq7", "appendix_b1", "consistent"] | None = _fclub("rho_formula")
    rho_constant: float | None = _fclub("rho_constant")
    tree_depth: Literal["horizon", "theory", "reference"] | None = _fclub("tree_depth")
    lifecycle: Literal["persistent", "reset_every_phase"] | None = _fclub("lifecycle")
    recommendation: Literal["synchronized", "with_own_buffer"] | None = _fclub("recommendation")
    beta_form: Literal["lemma1", "reference"] | None = _fclub("beta_form")
    beta_scale: float | None = _fclub("beta_scale")
    thresholds: Literal["practical", "theoretical"] | None = _fclub("thresholds")
    noise_in_trigger_only: bool | None = _fclub("noise_in_trigger_only")
    reference_h_column: bool | None = _fclub("reference_h_column")
    skip_unseen_users: bool | None = _fclub("skip_unseen_users")
    merge_same_server: bool | None = _fclub("merge_same_server")
    merge_rule: Literal["components", "reference"] | None = _fclub("merge_rule")
    shared_statistics_defect: bool | None = _fclub("shared_statistics_defect")
    rebuild_local_copies: bool | None = _fclub("rebuild_local_copies")
    renew_every_phase: bool | None = _fclub("renew_every_phase")
    ridge_in_recommendation_only: bool | None = _fclub("ridge_in_recommendation_only")
    carry_synchronized_copies: bool | None = _fclub("carry_synchronized_copies")
    pd_repair: Literal["clip", "shift"] | None = _fclub("pd_repair")
    refresh_every: int | None = _fclub("refresh_every")
    tie_break: Literal["lowest", "random"] | None = _fclub("tie_break")
    needs: ClassVar[str] = "users"

    _PRESET_FIELDS: ClassVar[tuple[str, ...]] = ("kind", "label", "variant", "preset")

    def overrides(self) -> dict[str, Any]:
        """The FCLUBConfig options set here (those left out keep the preset's)."""
        return {name: value for name, value in self.model_dump().items()
                if name not in self._PRESET_FIELDS and value is not None}  # fmt: skip

    def protocol_config(self, horizon: int):
        """The :class:`~privbandits.protocols.fclub.config.FCLUBConfig` of a run of ``horizon`` rounds."""
        from privbandits.protocols.fclub.config import FCLUBConfig

        return FCLUBConfig.from_preset(self.variant, self.preset, **self.overrides(), horizon=horizon)

    @model_validator(mode="after")
    def _consistent(self) -> FCLUBPolicyConfig:
        try:
            self.protocol_config(1)
        except ValueError as error:
            raise ValueError(str(error)) from None
        return self


class _LocalBaselineBase(_Labelled):
    ridge: float = declared("BaselineConfig", "ridge")
    beta_scale: float = declared("BaselineConfig", "beta_scale")
    beta_a: float | None = declared("BaselineConfig", "beta_a")
    tie_break: Literal["lowest", "random"] = declared("BaselineConfig", "tie_break")
    needs: ClassVar[str] = "users"
    baseline: ClassVar[str]

    def protocol_config(self, horizon: int):
        """The :class:`~privbandits.protocols.fclub.baselines.BaselineConfig` of a run."""
        from privbandits.protocols.fclub.baselines import BaselineConfig, LocalBaseline

        options = self.model_dump(exclude={"kind", "label"})
        return BaselineConfig(kind=LocalBaseline(self.baseline), horizon=horizon, **options)


class CLUBConfig(_LocalBaselineBase):
    """CLUB (Gentile et al. 2014) on each local server's users: edge deletion on a user graph; nothing is sent."""

    kind: Literal["club"]
    alpha_club: float = declared("BaselineConfig", "alpha_club")
    baseline: ClassVar[str] = "club"


class SCLUBConfig(_LocalBaselineBase):
    """SCLUB (Li et al. 2019) on each local server's users: stage-wise split and merge of clusters; nothing is sent."""

    kind: Literal["sclub"]
    alpha_sclub: float = declared("BaselineConfig", "alpha_sclub")
    alpha_frequency: float = declared("BaselineConfig", "alpha_frequency")
    baseline: ClassVar[str] = "sclub"


class UserLinUCBConfig(_LocalBaselineBase):
    """LinUCB per user (OFUL): every user is its own cluster; nothing is sent."""

    kind: Literal["user_linucb"]
    baseline: ClassVar[str] = "linucb"


def _mpc(name: str, **changes: Any) -> Any:
    return declared("MPCBanditConfig", name, **changes)


class PlaintextMPCEpsilonGreedyConfig(_Labelled):
    """The float64 twin of the private ε-greedy learner: same exploration draws, per-arm ridge (λ = 1)."""

    kind: Literal["plaintext_mpc_epsilon_greedy"]
    epsilon: float = declared("MPCBanditConfig", "epsilon")
    precision: int = declared("MPCBanditConfig", "precision")

    def protocol_config(self, n_arms: int, dim: int):
        from privbandits.protocols.mpc_bandit import MPCBanditConfig

        return MPCBanditConfig(n_arms=n_arms, partition=(dim, 0), epsilon=self.epsilon, precision=self.precision)


class MPCEpsilonGreedyConfig(PlaintextMPCEpsilonGreedyConfig):
    """The MPC paper's private ε-greedy learner (Alg. 1): per-arm ridge statistics secret-shared among the parties."""

    kind: Literal["mpc_epsilon_greedy"]  # type: ignore[assignment]  # its own tag: pydantic's union tells the subclass by it
    partition: Annotated[list[Annotated[int, Field(ge=0)]] | None, Listed] = Field(
        None, min_length=2, description="features per computing party (None: two parties, halves)"
    )
    nr_iterations: int = _mpc("nr_iterations", le=50)  # the protocol takes any number
    truncation: Literal["auto", "local", "wraps", "exact"] = _mpc("truncation")
    truncation_rounding: Literal["unbiased"] = _mpc("truncation_rounding")
    puller: str = _mpc("puller")
    rewarder: str = _mpc("rewarder")
    binary_rewards: bool = _mpc("binary_rewards")
    mask_encoding: Literal["integer", "fixed_point"] = _mpc("mask_encoding")
    reciprocal_start: Literal["exp", "linear"] = _mpc("reciprocal_start")
    overlap_reciprocal: bool = _mpc("overlap_reciprocal")
    mask_factors: bool = _mpc("mask_factors")
    allmax_lookup: bool = _mpc("allmax_lookup")
    lookup_comparison: bool = _mpc("lookup_comparison")
    goldschmidt: bool = _mpc("goldschmidt")
    dealt_exploration: bool = _mpc("dealt_exploration")
    fused_input: bool = _mpc("fused_input")

    LATER: ClassVar[dict[str, object]] = {"reciprocal_start": "exp", **dict.fromkeys(MPC_LATER_OPTIONS, False)}
    """The protocol's options added after runs were stored
    (:data:`~privbandits.experiments.later_options.MPC_LATER_OPTIONS`) and the reciprocal's start."""

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
    participation: float = declared("P2BConfig", "participation")
    threshold: int = declared("P2BConfig", "threshold")
    omega: float | None = declared("P2BConfig", "omega")
    negative_rate: float = declared("P2BConfig", "negative_rate")
    early_fraction: float = declared("P2BConfig", "early_fraction")
    alpha: float = declared("P2BConfig", "alpha")
    representation: Literal["one_hot", "scalar_code"] = declared("P2BConfig", "representation")
    shared_warm_agent: bool = declared("P2BConfig", "shared_warm_agent")
    tie_break: Literal["random", "lowest"] = declared("P2BConfig", "tie_break")
    needs: ClassVar[str] = "population"

    def protocol_config(self):
        from privbandits.protocols.p2b.core import P2BConfig

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
