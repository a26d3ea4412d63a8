"""Policy configs: one pydantic model per learner or protocol ``kind``, each a registered policy kind.

Each model declares its options (types, bounds, defaults; a protocol's options from its declaration: the
:func:`declared` fields, or a typed option model of :mod:`privbandits.declared` inherited whole), builds its run's
learner or population run, and says what it cannot run on and what it adds to a run's store key
(:class:`~privbandits.experiments.config.kind.PolicyKindConfig`'s hooks). Each registers itself where it is
declared (``@register``: :data:`~privbandits.experiments.registry.POLICY_KINDS`, in the order the kinds are
listed). The protocols are imported only when a run builds its learner, so the config stays light to import.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from privbandits.declared import DPLinUCBOptions, MPCBanditOptions, P2BOptions
from privbandits.experiments.config.base import Listed, _Strict, declared
from privbandits.experiments.config.kind import Needs, PolicyKindConfig
from privbandits.experiments.later_options import (
    FCLUB_STORED_NOISE,
    MPC_LATER_OPTIONS,
    fclub_named_noise,
    fclub_private,
)
from privbandits.experiments.noise_key import FCLUB_UPLOADS, sampler_key
from privbandits.experiments.registry import POLICY_KINDS, kind_of

if TYPE_CHECKING:
    import numpy as np

    from privbandits.experiments.adapters import Learner
    from privbandits.experiments.sources import EnvironmentSource, ReplaySource
    from privbandits.protocols.dp import PrivateLinUCB

register = POLICY_KINDS.register


def _server_of_user(source: EnvironmentSource | ReplaySource) -> Any:
    """The local server of each user of ``source`` (incompatibility() admits user kinds only on environments with
    users)."""
    server_of_user = source.server_of_user
    assert server_of_user is not None, "user learners need an environment with users"
    return server_of_user


# -- plaintext and vertical policies on the round's contexts ----------------------------------------------------------
class _PolicyBase(PolicyKindConfig):
    visible_features: int | None = Field(None, ge=1)

    def learner(self, source: EnvironmentSource | ReplaySource, horizon: int, seed: np.random.SeedSequence) -> Learner:
        """The policy on the first ``visible_features`` features (all by default), drawing from
        ``default_rng(seed)``."""
        import numpy as np

        from privbandits.experiments.adapters import PolicyLearner

        visible = self.visible_features
        return PolicyLearner(self.policy(source.n_arms, visible or source.dim, np.random.default_rng(seed)), visible)

    def policy(self, n_arms: int, dim: int, rng: np.random.Generator) -> Any:
        """A fresh policy for ``n_arms`` arms on ``dim``-dimensional contexts."""
        raise NotImplementedError(f"{type(self).__name__} must build its policy")


class _LinearPolicyBase(_PolicyBase):
    if TYPE_CHECKING:  # each subclass's own field (its default differs)
        layout: str
    reg: float = declared("LinUCB", "reg")
    refresh_every: int = declared("LinUCB", "refresh_every")
    tie_break: Literal["lowest", "random"] = declared("LinUCB", "tie_break")
    tie_tolerance: float = declared("LinUCB", "tie_tolerance", le=1)  # the learners take any tolerance >= 0

    def _options(self, rng: np.random.Generator) -> dict[str, Any]:
        """The options every linear learner takes."""
        return dict(
            layout=self.layout,
            reg=self.reg,
            refresh_every=self.refresh_every,
            tie_break=self.tie_break,
            tie_tolerance=self.tie_tolerance,
            rng=rng,
        )


@register
class LinUCBConfig(_LinearPolicyBase):
    """LinUCB (Li et al. 2010): ridge estimate + alpha × confidence width."""

    kind: Literal["linucb"]
    layout: Literal["shared", "disjoint"] = declared("LinUCB", "layout")
    alpha: float = declared("LinUCB", "alpha")

    def policy(self, n_arms: int, dim: int, rng: np.random.Generator) -> Any:
        from privbandits.linear import LinUCB

        return LinUCB(n_arms, dim, alpha=self.alpha, **self._options(rng))


@register
class LinTSConfig(_LinearPolicyBase):
    """Linear Thompson sampling (Agrawal & Goyal 2013): μ ~ N(θ̂, v² A⁻¹)."""

    kind: Literal["lints"]
    layout: Literal["shared", "disjoint"] = declared("LinTS", "layout")
    v: float = declared("LinTS", "v")
    sampler: Literal["cholesky", "eigh"] = declared("LinTS", "sampler")

    def policy(self, n_arms: int, dim: int, rng: np.random.Generator) -> Any:
        from privbandits.linear import LinTS

        return LinTS(n_arms, dim, v=self.v, sampler=self.sampler, **self._options(rng))


@register
class EpsilonGreedyConfig(_LinearPolicyBase):
    """ε-greedy on ridge estimates (the MPC paper's learner, Alg. 1)."""

    kind: Literal["epsilon_greedy"]
    layout: Literal["shared", "disjoint"] = declared("EpsilonGreedy", "layout")
    epsilon: float = declared("EpsilonGreedy", "epsilon")

    def policy(self, n_arms: int, dim: int, rng: np.random.Generator) -> Any:
        from privbandits.linear import EpsilonGreedy

        return EpsilonGreedy(n_arms, dim, epsilon=self.epsilon, **self._options(rng))


class _VerticalBase(_Strict):
    """Fields shared by the vertical federated protocols (spec ``vertical-o3m.md``)."""

    partition: Annotated[list[Annotated[int, Field(ge=1)]], Listed] = Field(min_length=2)
    mask_source: Literal["seeded", "os"] = declared("VerticalFederatedBandit", "mask_source")
    secure_aggregation: bool = declared("VerticalFederatedBandit", "secure_aggregation")

    @field_validator("visible_features", check_fields=False)
    @classmethod
    def _all_features(cls, value: int | None) -> int | None:
        if value is not None:
            plaintext = " or ".join(repr(kind_of(model)) for model in (LinUCBConfig, LinTSConfig))
            raise ValueError(
                "not used by vertical protocols (every party's block is used); for a partial "
                f"baseline use kind {plaintext} with visible_features"
            )
        return value

    @model_validator(mode="after")
    def _enough_parties(self):
        if self.secure_aggregation and len(self.partition) < 3:
            raise ValueError("secure_aggregation needs at least 2 passive parties (3 or more partition blocks)")
        return self

    def federated(self, learner: Any, mask_rng: np.random.Generator) -> Any:
        """The active party's ``learner`` behind the protocol, its masks drawn from ``mask_rng``."""
        from privbandits.protocols.vertical.core import VerticalFederatedBandit

        return VerticalFederatedBandit(
            self.partition,
            learner,
            mask_source=self.mask_source,
            rng=mask_rng,
            secure_aggregation=self.secure_aggregation,
        )


@register
class VerticalLinUCBConfig(_VerticalBase, LinUCBConfig):
    """VFUCB: LinUCB at the active party on O3M-masked contexts from all parties (lossless)."""

    kind: Literal["vfucb"]  # type: ignore[assignment]  # its own tag: pydantic's union tells the subclass by it
    layout: Literal["shared"] = "shared"

    def policy(self, n_arms: int, dim: int, rng: np.random.Generator) -> Any:
        mask_rng, learner_rng = rng.spawn(2)
        return self.federated(super().policy(n_arms, dim, learner_rng), mask_rng)


@register
class VerticalLinTSConfig(_VerticalBase, LinTSConfig):
    """VFTS: LinTS at the active party on O3M-masked contexts (same distribution as LinTS)."""

    kind: Literal["vfts"]  # type: ignore[assignment]  # its own tag: pydantic's union tells the subclass by it
    layout: Literal["shared"] = "shared"

    def policy(self, n_arms: int, dim: int, rng: np.random.Generator) -> Any:
        mask_rng, learner_rng = rng.spawn(2)
        return self.federated(super().policy(n_arms, dim, learner_rng), mask_rng)


@register
class RandomPolicyConfig(_PolicyBase):
    """A uniformly random arm every round (baseline)."""

    kind: Literal["random"]

    def policy(self, n_arms: int, dim: int, rng: np.random.Generator) -> Any:
        from privbandits.linear import UniformRandom

        return UniformRandom(n_arms, rng=rng)


# -- users on local servers: FCLUB and the local baselines -----------------------------------------------------------
def _fclub(name: str) -> Any:
    """FCLUBConfig's option ``name`` with no default: left out (None), the variant's preset decides."""
    return declared("FCLUBConfig", name, default=None)


@register
class FCLUBPolicyConfig(PolicyKindConfig):
    """FCLUB (Liu et al. 2022): CDP-FCLUB-DC and variants on local servers + a global server; every FCLUBConfig option.

    ``variant`` and ``preset`` give the starting options (``preset = "reference"``: the
    reference code's behaviour, ``FCLUBConfig.reference_compatible``); every other field
    left out keeps the preset's value, but for the noise of a private ``paper`` run, which is the analytic
    Gaussian, named in its spec (:meth:`_named_noise`). The horizon is the experiment's.
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
    continual_release: Literal["tree", "sqrt_factorization"] | None = _fclub("continual_release")
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
    needs: ClassVar[Needs] = "users"
    LATER: ClassVar[dict[str, object]] = {"continual_release": None}
    """Added after runs were stored: left to the preset (the tree), a run spec leaves it out (keys kept)."""

    _PRESET_FIELDS: ClassVar[tuple[str, ...]] = ("kind", "label", "variant", "preset")

    @model_validator(mode="before")
    @classmethod
    def _named_noise(cls, data: Any) -> Any:
        """The default noise named (:func:`~privbandits.experiments.later_options.fclub_named_noise`): left out, a
        private ``paper`` run is at the analytic Gaussian, in its spec. That preset's paper form, ``"squared_log"``,
        is None in the spec, as the runs stored when it was the default have it, so they keep their keys."""
        if not isinstance(data, dict):
            return data
        variant = data.get("variant", cls.model_fields["variant"].default)
        preset = data.get("preset", cls.model_fields["preset"].default)
        if preset == "paper" and data.get("noise_variance") == FCLUB_STORED_NOISE:
            return {**data, "noise_variance": None}
        return fclub_named_noise(data, variant, preset)

    def overrides(self) -> dict[str, Any]:
        """The FCLUBConfig options set here (those left out keep the preset's; the ``paper`` preset's noise left
        out is its form before issue 47, :data:`~privbandits.experiments.later_options.FCLUB_STORED_NOISE`)."""
        chosen = {name: value for name, value in self.model_dump().items()
                  if name not in self._PRESET_FIELDS and value is not None}  # fmt: skip
        if self.preset == "paper":
            chosen.setdefault("noise_variance", FCLUB_STORED_NOISE)
        return chosen

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

    def learner(self, source: EnvironmentSource | ReplaySource, horizon: int, seed: np.random.SeedSequence) -> Learner:
        import numpy as np

        from privbandits.experiments.adapters import UserLearner
        from privbandits.protocols.fclub.driver import FederatedClusteredBandit

        protocol, users, rng = self.protocol_config(horizon), _server_of_user(source), np.random.default_rng(seed)
        return UserLearner(FederatedClusteredBandit(protocol, users, source.dim, source.n_arms, rng=rng))

    def noise_key(self) -> dict[str, str]:
        """The noise sampler and the snapped uploads (:data:`~privbandits.experiments.noise_key.FCLUB_UPLOADS`)
        where the variant is private."""
        return {**sampler_key(), **FCLUB_UPLOADS} if fclub_private(self.variant, self.private) else {}


class _LocalBaselineBase(PolicyKindConfig):
    ridge: float = declared("BaselineConfig", "ridge")
    beta_scale: float = declared("BaselineConfig", "beta_scale")
    beta_a: float | None = declared("BaselineConfig", "beta_a")
    tie_break: Literal["lowest", "random"] = declared("BaselineConfig", "tie_break")
    needs: ClassVar[Needs] = "users"
    baseline: ClassVar[str]

    def protocol_config(self, horizon: int):
        """The :class:`~privbandits.protocols.fclub.baselines.BaselineConfig` of a run."""
        from privbandits.protocols.fclub.baselines import BaselineConfig, LocalBaseline

        options = self.model_dump(exclude={"kind", "label"})
        return BaselineConfig(kind=LocalBaseline(self.baseline), horizon=horizon, **options)

    def learner(self, source: EnvironmentSource | ReplaySource, horizon: int, seed: np.random.SeedSequence) -> Learner:
        import numpy as np

        from privbandits.experiments.adapters import UserLearner
        from privbandits.protocols.fclub.baselines import LocalBaselineBandit

        protocol, rng = self.protocol_config(horizon), np.random.default_rng(seed)
        return UserLearner(LocalBaselineBandit(protocol, _server_of_user(source), source.dim, rng))


@register
class CLUBConfig(_LocalBaselineBase):
    """CLUB (Gentile et al. 2014) on each local server's users: edge deletion on a user graph; nothing is sent."""

    kind: Literal["club"]
    alpha_club: float = declared("BaselineConfig", "alpha_club")
    baseline: ClassVar[str] = "club"


@register
class SCLUBConfig(_LocalBaselineBase):
    """SCLUB (Li et al. 2019) on each local server's users: stage-wise split and merge of clusters; nothing is sent."""

    kind: Literal["sclub"]
    alpha_sclub: float = declared("BaselineConfig", "alpha_sclub")
    alpha_frequency: float = declared("BaselineConfig", "alpha_frequency")
    baseline: ClassVar[str] = "sclub"


@register
class UserLinUCBConfig(_LocalBaselineBase):
    """LinUCB per user (OFUL): every user is its own cluster; nothing is sent."""

    kind: Literal["user_linucb"]
    baseline: ClassVar[str] = "linucb"


# -- the secure multi-party ε-greedy learner and its twin --------------------------------------------------------------
class _MPCLearnerBase(PolicyKindConfig):
    """What the private ε-greedy learner and its float64 twin share: one model per arm on one context per round,
    learning from every round; their options are :class:`~privbandits.protocols.mpc_bandit.MPCBanditConfig`'s."""

    def protocol_config(self, n_arms: int, dim: int):
        """The :class:`~privbandits.protocols.mpc_bandit.MPCBanditConfig` of a run: the options held here (later
        options at their defaults left out: the protocol's defaults, the same values)."""
        from privbandits.protocols.mpc_bandit import MPCBanditConfig

        options = self.model_dump(include=set(MPCBanditOptions.model_fields))
        return MPCBanditConfig(n_arms=n_arms, partition=self.parties(dim), **options)

    def parties(self, dim: int) -> tuple[int, ...]:
        """Features per computing party."""
        raise NotImplementedError(f"{type(self).__name__} must say how it splits the features")

    def learner_class(self) -> type:
        """The learner's class (the private one or its twin)."""
        raise NotImplementedError(f"{type(self).__name__} must name its learner")

    def learner(self, source: EnvironmentSource | ReplaySource, horizon: int, seed: np.random.SeedSequence) -> Learner:
        """The learner, its engine and exploration streams derived from ``seed`` (so the private learner and its
        twin share their exploration draws)."""
        from privbandits.experiments.adapters import StepLearner
        from privbandits.experiments.sources import EnvironmentSource

        # environment_problem() refuses replay, the only source without reward()
        assert isinstance(source, EnvironmentSource), "MPC learners run on environments, not replay"
        protocol = self.protocol_config(source.n_arms, source.dim)
        return StepLearner(self.learner_class()(protocol, seed=seed), source.reward)

    def environment_problem(self, env: Any) -> str | None:
        name = repr(env.kind)
        if env.per_arm_contexts:
            return (
                f"kind {self.kind!r} keeps one model per arm on one context per round; "
                f"environment {name} gives one context per arm"
            )
        if env.replay:
            return (
                f"kind {self.kind!r} learns from every round; replay needs learners that learn "
                "only from matched rounds"
            )
        if getattr(self, "binary_rewards", False) and not env.binary_rewards:
            return f"binary_rewards is set but environment {name} has real-valued rewards; set binary_rewards = false"
        return None


@register
class MPCEpsilonGreedyConfig(MPCBanditOptions, _MPCLearnerBase):
    """The MPC paper's private ε-greedy learner (Alg. 1): per-arm ridge statistics secret-shared among the parties."""

    kind: Literal["mpc_epsilon_greedy"]
    partition: Annotated[list[Annotated[int, Field(ge=0)]] | None, Listed] = Field(
        None, min_length=2, description="features per computing party (None: two parties, halves)"
    )
    nr_iterations: int = declared("MPCBanditConfig", "nr_iterations", le=50)  # the protocol takes any number

    LATER: ClassVar[dict[str, object]] = {"reciprocal_start": "exp", **dict.fromkeys(MPC_LATER_OPTIONS, False)}
    """The protocol's options added after runs were stored
    (:data:`~privbandits.experiments.later_options.MPC_LATER_OPTIONS`) and the reciprocal's start."""

    def parties(self, dim: int) -> tuple[int, ...]:
        return tuple(self.partition) if self.partition is not None else ((dim + 1) // 2, dim // 2)

    def learner_class(self) -> type:
        from privbandits.protocols.mpc_bandit import PrivateEpsilonGreedy

        return PrivateEpsilonGreedy

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


@register
class PlaintextMPCEpsilonGreedyConfig(_MPCLearnerBase):
    """The float64 twin of the private ε-greedy learner: same exploration draws, per-arm ridge (λ = 1)."""

    kind: Literal["plaintext_mpc_epsilon_greedy"]
    epsilon: float = declared("MPCBanditConfig", "epsilon")
    precision: int = declared("MPCBanditConfig", "precision")

    def parties(self, dim: int) -> tuple[int, ...]:
        return (dim, 0)  # one party holds every feature: nothing is shared

    def learner_class(self) -> type:
        from privbandits.protocols.mpc_bandit import PlaintextEpsilonGreedy

        return PlaintextEpsilonGreedy


# -- P2B's population --------------------------------------------------------------------------------------------------
P2B_SETTINGS = ("cold", "warm_non_private", "warm_private")
"""The late users' settings a P2B run reports the mean reward of."""


@register
class P2BPolicyConfig(P2BOptions, PolicyKindConfig):
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
    needs: ClassVar[Needs] = "population"

    def protocol_config(self):
        """The :class:`~privbandits.protocols.p2b.config.P2BConfig` of a run: every option it declares, from here."""
        from privbandits.protocols.p2b.config import P2BConfig

        return P2BConfig(**self.model_dump(include=set(P2BOptions.model_fields)))

    def environment_problem(self, env: Any) -> str | None:
        """What makes the encoder or the early / late split unusable on the population (``field: why``)."""
        grid = math.comb(10**self.precision + env.context_dim - 1, env.context_dim - 1)
        if self.n_codes > grid:
            return (
                f"n_codes: must be <= the {grid} points of the simplex grid (d = {env.context_dim}, "
                f"q = {self.precision}) (got {self.n_codes})"
            )
        users = env.users
        early = int(self.early_fraction * users)
        if not 1 <= early < users:
            return (
                f"early_fraction: leaves {early} early and {users - early} late users of {users}; "
                f"both must be >= 1 (got {self.early_fraction})"
            )
        return None

    def population_metrics(self, environment: Any, horizon: int, seed: int) -> dict[str, float]:
        """One P2B simulation (:func:`privbandits.protocols.p2b.core.simulate`): users generated from ``seed``,
        ``horizon`` interactions each; the late users' mean rewards in each setting, and what was shared."""
        from threadpoolctl import threadpool_limits

        from privbandits.experiments.sources import build_population
        from privbandits.privacy.encoding import load_or_fit_encoder
        from privbandits.protocols.p2b.core import simulate

        data = build_population(environment, horizon, seed)
        encoder = load_or_fit_encoder(environment.context_dim, self.precision, self.n_codes, seed=self.encoder_seed)
        with threadpool_limits(limits=1):
            outcome = simulate(data, encoder, self.protocol_config(), seed)
        metrics: dict[str, float] = {}
        for name in P2B_SETTINGS:
            result = getattr(outcome, name)
            metrics |= {name: result.mean, f"{name}_std": result.std}
        return metrics | {
            "late_users": outcome.cold.n_users,
            "raw_tuples_shared": outcome.raw_tuples_shared,
            "encoded_tuples_shared": outcome.encoded_tuples_shared,
            "released": outcome.release.get("released", 0),
            "min_released_crowd": outcome.release.get("min_released_crowd", float("nan")),
            "epsilon": outcome.ledger.entries[-1].epsilon,
            "bytes": outcome.traffic.total().bytes,
        }


# -- the DP LinUCB baselines -------------------------------------------------------------------------------------------
class _DPLinUCBBase(DPLinUCBOptions, PolicyKindConfig):
    """The options of the DP LinUCB baselines (:mod:`privbandits.protocols.dp`), as
    :class:`~privbandits.protocols.dp.PrivateLinUCB` declares them; the horizon is the experiment's."""

    epsilon: float = declared("PrivateLinUCB", "epsilon", default=1.0)  # the learners have no default ε or δ
    delta: float = declared("PrivateLinUCB", "delta", default=1e-5)
    tie_tolerance: float = declared("PrivateLinUCB", "tie_tolerance", le=1)  # as the other configs
    LATER: ClassVar[dict[str, object]] = {"calibration": "paper"}
    """The default before issue 47 (now ``"analytic"``): a stored spec without the field ran at ``"paper"``, and
    its key is kept (:meth:`~privbandits.experiments.registry.PolicyKindRegistry.from_spec` reads it back so)."""
    per_arm_only: ClassVar[bool] = True

    def learner_class(self) -> type[PrivateLinUCB]:
        """The baseline's learner."""
        raise NotImplementedError(f"{type(self).__name__} must name its learner")

    def learner(self, source: EnvironmentSource | ReplaySource, horizon: int, seed: np.random.SeedSequence) -> Learner:
        import numpy as np

        from privbandits.experiments.adapters import PolicyLearner

        options = self.model_dump(exclude={"kind", "label"})
        options["calibration"] = self.calibration  # dropped from the dump at its LATER value ("paper"), never implied
        rng = np.random.default_rng(seed)
        return PolicyLearner(self.learner_class()(source.n_arms, source.dim, horizon=horizon, rng=rng, **options))

    def noise_key(self) -> dict[str, str]:
        """The noise sampler, at a finite ε."""
        return sampler_key() if math.isfinite(self.epsilon) else {}


@register
class JointDPLinUCBConfig(_DPLinUCBBase):
    """Joint-DP LinUCB (Shariff & Sheffet 2018): the Gram matrix and Σ r·x through the tree-based mechanism."""

    kind: Literal["joint_dp_linucb"]
    continual_release: Literal["tree", "sqrt_factorization"] = declared("JointDPLinUCB", "continual_release")
    factorization_band: int | None = declared("JointDPLinUCB", "factorization_band")
    LATER: ClassVar[dict[str, object]] = {
        **_DPLinUCBBase.LATER,
        "continual_release": "tree",
        "factorization_band": None,
    }
    """Also the continual release and the factorization's band, added after runs were stored: at the tree (and a
    chosen band), a run spec leaves them out (keys kept)."""

    def noise_key(self) -> dict[str, str]:
        """The sampler, and with the factorization the mechanism's name (a changed band choice is a new key)."""
        key = super().noise_key()
        if key and self.continual_release == "sqrt_factorization":
            from privbandits.privacy.factorization import FACTORIZATION_KEY

            key["factorization"] = FACTORIZATION_KEY
        return key

    def learner_class(self) -> type[PrivateLinUCB]:
        from privbandits.protocols.dp import JointDPLinUCB

        return JointDPLinUCB


@register
class LocalDPLinUCBConfig(_DPLinUCBBase):
    """Local-DP LinUCB (Zheng et al. 2020): each user sends x xᵀ and r·x with Gaussian noise."""

    kind: Literal["local_dp_linucb"]

    def learner_class(self) -> type[PrivateLinUCB]:
        from privbandits.protocols.dp import LocalDPLinUCB

        return LocalDPLinUCB


@register
class ShuffleDPLinUCBConfig(_DPLinUCBBase):
    """Shuffle-model LinUCB (Chowdhury & Zhou 2022): batches of local reports through a trusted shuffler."""

    kind: Literal["shuffle_dp_linucb"]
    batch_size: int = declared("ShuffleDPLinUCB", "batch_size")

    def learner_class(self) -> type[PrivateLinUCB]:
        from privbandits.protocols.dp import ShuffleDPLinUCB

        return ShuffleDPLinUCB
