"""Policy configs: one pydantic model per learner or protocol ``kind``, and the tagged union of them.

Each model declares its options (types, bounds, defaults) and, for the protocols, builds the
protocol's own configuration (``protocol_config``). ``LATER`` fields were added after runs were
stored: at their defaults they are left out of the run spec, so those runs keep their keys.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import Field, field_validator, model_serializer, model_validator

from privbandits.experiments.config.base import Listed, _Strict
from privbandits.linear.defaults import DEFAULT_REFRESH_EVERY, DEFAULT_TIE_TOLERANCE


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

    kind: Literal["vfucb"]  # type: ignore[assignment]  # its own tag: pydantic's union tells the subclass by it
    layout: Literal["shared"] = "shared"


class VerticalLinTSConfig(_VerticalBase, LinTSConfig):
    """VFTS: LinTS at the active party on O3M-masked contexts (same distribution as LinTS)."""

    kind: Literal["vfts"]  # type: ignore[assignment]  # its own tag: pydantic's union tells the subclass by it
    layout: Literal["shared"] = "shared"


class RandomPolicyConfig(_PolicyBase):
    """A uniformly random arm every round (baseline)."""

    kind: Literal["random"]


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
        from privbandits.protocols.fclub_baselines import BaselineConfig, LocalBaseline

        options = self.model_dump(exclude={"kind", "label"})
        return BaselineConfig(kind=LocalBaseline(self.baseline), horizon=horizon, **options)


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

    kind: Literal["mpc_epsilon_greedy"]  # type: ignore[assignment]  # its own tag: pydantic's union tells the subclass by it
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
