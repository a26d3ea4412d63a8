"""Configuration and calibration of FCLUB (spec ``fclub.md``; Liu et al., UAI 2022).

:class:`FCLUBConfig` holds every knob of Algorithm 1 with the spec's §8
recommendations as defaults and each printed alternative as a named option;
:class:`Calibration` turns it into the numbers a run uses (σ_noise, ρ, κ, ν, β,
the detection thresholds), so the protocol code never re-derives a formula.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import overload

import numpy as np

from privbandits.linear.tiebreak import TieBreak
from privbandits.options import check_fields, option
from privbandits.privacy import factorization
from privbandits.privacy.accountant import Release
from privbandits.privacy.calibration import snapped_std
from privbandits.privacy.noise import TAIL, check_exact, grid_step, snap_to
from privbandits.privacy.tree_mechanism import (
    REPLACE_SENSITIVITY,
    SNAPPED_CAP,
    NoiseVariance,
    augmented_coordinates,
    node_variance,
)
from privbandits.protocols.dp.joint import ContinualRelease
from privbandits.validation import (
    Boolean,
    Choice,
    Instance,
    Integer,
    InvalidInputError,
    NoneOr,
    Real,
    check,
    validate,
)


class Variant(StrEnum):
    """The algorithms of the paper's experiments that differ only in options (§6.1)."""

    CDP_FCLUB_DC = "cdp-fclub-dc"
    FCLUB_DC = "fclub-dc"
    FCLUB = "fclub"
    HOMO_DC = "homo-dc"
    HOMO = "homo"


PRESETS = ("paper", "reference")
"""Where a variant's options start, named alike in experiment configs and deployment files: ``paper``
(:meth:`FCLUBConfig.for_variant`, the paper's algorithm: CDP-FCLUB-DC privatizes every upload, at the analytic
Gaussian's noise unless ``noise_variance`` names a printed form) or ``reference``
(:meth:`FCLUBConfig.reference_compatible`, the reference code's behaviour: the paper reproductions' plain
"CDP-FCLUB-DC", whose noise is only in the upload trigger)."""


class RhoFormula(StrEnum):
    """Spectral bound ρ on the tree noise (§4.2, §8 A5).

    EQ7: ``8√(2ν) ln(4/δ)(4√d + 2 ln(2mL/α))/ε``; APPENDIX_B1: ``8√2·ν`` in place of
    ``8√(2ν)``; CONSISTENT: ``c·√ν·σ_noise·(4√d + 2 ln(2mL/α))`` with c = ``rho_constant``.
    """

    EQ7 = "eq7"
    APPENDIX_B1 = "appendix_b1"
    CONSISTENT = "consistent"


class TreeDepth(StrEnum):
    """Tree depth ν (§8 A6): HORIZON ``⌈log2(T+1)⌉+1``; THEORY with t_max = phases +
    ``⌈d ln T / ln min(U, D)⌉``; REFERENCE ``⌊ln(t_phase+1)⌋+1`` at each phase start."""

    HORIZON = "horizon"
    THEORY = "theory"
    REFERENCE = "reference"


class Lifecycle(StrEnum):
    """Privatizer lifecycle (§8 A9).

    PERSISTENT
        PVT(ℓ, j) lives while the cluster's user set is unchanged; phase-start
        releases draw from a second, phase-start tree of the same cluster, so
        they never disturb the asynchronous chain.
    RESET_EVERY_PHASE
        Renew at every phase and start a fresh tree per cluster: its first release
        is the phase-start one (H̃), its second the renewal draw (line 14).
    """

    PERSISTENT = "persistent"
    RESET_EVERY_PHASE = "reset_every_phase"


class Recommendation(StrEnum):
    """Statistics behind the UCB (§3.7, §8 A11): the synchronized copy, or it plus
    the cluster's own raw data not yet uploaded (the reference code)."""

    SYNCHRONIZED = "synchronized"
    WITH_OWN_BUFFER = "with_own_buffer"


class BetaForm(StrEnum):
    """Confidence radius: LEMMA1 (private; OFUL for non-private variants, §8 A16) or
    REFERENCE (the reference code's β_CDP and 0.5·√(…) forms, §6.3)."""

    LEMMA1 = "lemma1"
    REFERENCE = "reference"


class Thresholds(StrEnum):
    """Deletion/merge tests: PRACTICAL (Eqs. 3/4 with α1, α2) or THEORETICAL (w, w̃ of §5.2)."""

    PRACTICAL = "practical"
    THEORETICAL = "theoretical"


class MergeRule(StrEnum):
    """When the global server merges local clusters (Alg. 2 line 7).

    COMPONENTS
        At every phase start: connected components of the Eq. 4 graph (§8 A7).
    REFERENCE
        The reference code's rule (issue 15 (b)): merge only when some pair of local clusters fails
        Eq. 4 and the previous partition was not already every local cluster alone over the same
        per-server cluster counts; otherwise every local cluster is its own global cluster. Its
        FCLUB-DC therefore runs as per-server learners until the first local split, and Homo-DC, whose
        merge test always passes, never merges.
    """

    COMPONENTS = "components"
    REFERENCE = "reference"


class PDRepair(StrEnum):
    """What to do with a synchronized Gram matrix that is not positive definite (§8 A15):
    CLIP its eigenvalues at ``ridge``, or SHIFT it by ``(ridge − λ_min) I``."""

    CLIP = "clip"
    SHIFT = "shift"


_POSITIVE = Real(low=0, low_open=True)
_ABOVE_ONE = Real(low=1, low_open=True)
_OPEN_UNIT = Real(low=0, high=1, low_open=True, high_open=True)
"""Reals are finite unless said otherwise: ε = inf is refused."""


@dataclass(frozen=True)
class FCLUBConfig:
    """Every option of Algorithm 1 (CDP-FCLUB-DC) and its variants; see the report table.

    Defaults are the spec's recommendations (§8) at the paper's experimental
    setting, but for the privatizers' noise: the analytic Gaussian (``noise_variance = "analytic"``, issue 47: the
    smallest σ that makes the tree's ν nodes (ε, δ)-DP), where the spec recommends the paper's squared-log form,
    which the reproductions of the paper's numbers name (``"squared_log"``). :meth:`for_variant` and
    :meth:`reference_compatible` give the named presets. Invalid values raise ValueError naming the field and the
    allowed range.

    The reference code's phase-start behaviours (off by default; on in :meth:`reference_compatible`):

    ``shared_statistics_defect``
        THE REFERENCE CODE'S DOUBLE-COUNTING DEFECT (issue 15 (a)): after a renewal its local clusters
        and their global cluster hold one shared ``(S, u)`` until the next phase start, so an upload's
        buffer is added to it twice (the global ``+=`` and the local ``+=`` hit the same arrays) and
        every member sees it at once (no download is due). Counts ``T`` are not shared.
    ``merge_rule``
        :class:`MergeRule` (issue 15 (b) and the reference's Homo-DC, which never merges).
    ``rebuild_local_copies``
        Spec §7.3: at every phase start the local clusters restart from their own users' sums; without a
        renewal they hold only their server's data (and what later downloads bring).
    ``renew_every_phase``
        Renew at every phase start whether or not the partition changed (the reference's Homo-DC).

    The reference Homo-DC's behaviours (issue 29; on in its :meth:`reference_compatible` preset only):

    ``ridge_in_recommendation_only``
        The reference code's ridge: the synchronized copies and phase uploads hold none (no shift); it enters
        only the recommendation, ``(ridge·I + S + ΔS)⁻¹``. Eq. 5 is then what the reference computes,
        ``np.linalg.det(S + ΔS) / np.linalg.det(S) ≥ U``, LU determinants and an IEEE division: while ``S`` is
        singular its determinant is rounding noise of either sign (0 when ``S = 0``: ±inf or NaN), and a
        negative one never lets the cluster upload again once ``S + ΔS`` has full rank (in the reference
        Homo-DC about two servers in five stop uploading after 9 samples). Needs ``private=False`` or
        ``noise_in_trigger_only``, ``synchronous=False`` and practical thresholds.
    ``carry_synchronized_copies``
        Phase uploads are the local clusters' synchronized copies ``(S, u, T)`` instead of their users'
        sums (the reference Homo-DC's renewal sums ``l_cluster.S``; it never rebuilds its local clusters). With
        ``shared_statistics_defect`` the double count compounds across phases, and the upload buffers pending
        at a phase start are lost. Same needs as ``ridge_in_recommendation_only``.
    """

    horizon: int = option(Integer(low=1), 2**17 - 2, "T, the number of rounds")
    private: bool = option(Boolean(), True, "privatize the uploads with the tree mechanism (CDP)")
    synchronous: bool = option(Boolean(), False, "synchronize every round (FCLUB) instead of on the triggers (-DC)")
    detect_clusters: bool = option(Boolean(), True, "detect clusters (off: Homo, one cluster per local server)")
    detect_every_round: bool = option(Boolean(), False, "detect every round (the reference's FCLUB, spec §7.6)")
    epsilon: float = option(_POSITIVE, 1.0, "ε of the privatizers")
    delta: float = option(_OPEN_UNIT, 0.1, "δ of the privatizers")
    upload_threshold: float = option(_ABOVE_ONE, 1.01, "U, the upload trigger's determinant ratio (Eq. 5)")
    download_threshold: float = option(_ABOVE_ONE, 1.01, "D, the download trigger's determinant ratio")
    alpha: float | None = option(NoneOr(_OPEN_UNIT, "= 1/(8T)"), None, "confidence α (None: 1/(8T))")
    alpha1: float = option(_POSITIVE, 1.5, "α1 of the edge-deletion test (Eq. 3)")
    alpha2: float = option(_POSITIVE, 2.0, "α2 of the merge test (Eq. 4)")
    ridge: float = option(_POSITIVE, 1.0, "λ, the ridge regulariser")
    sigma0: float = option(Real(low=0), 0.5, "σ, the reward noise's sub-Gaussian scale")
    m_bound: int | None = option(NoneOr(Integer(low=1), "= n users"), None, "m in the logs (None: the number of users)")
    lambda_x: float | None = option(
        NoneOr(Real(low=0, high=1, low_open=True), "= 1/d"), None, "λ_x, the contexts' smallest eigenvalue (None: 1/d)"
    )
    noise_variance: NoiseVariance = option(
        Choice(NoiseVariance),
        NoiseVariance.ANALYTIC,
        "the tree's per-node variance: the analytic Gaussian (tight), or a printed form (§8 A4, reproductions)",
    )
    continual_release: ContinualRelease = option(
        Choice(ContinualRelease),
        ContinualRelease.TREE,
        "each privatizer's prefix sums by the binary tree (the paper's) or the square-root matrix factorization "
        "(lower noise at equal ε, δ; needs noise_variance = analytic)",
    )
    rho_formula: RhoFormula = option(Choice(RhoFormula), RhoFormula.EQ7, "spectral bound ρ on the tree noise (§8 A5)")
    rho_constant: float = option(_POSITIVE, 2.0, "c of the consistent ρ formula")
    tree_depth: TreeDepth = option(Choice(TreeDepth), TreeDepth.HORIZON, "tree depth ν (§8 A6)")
    lifecycle: Lifecycle = option(Choice(Lifecycle), Lifecycle.PERSISTENT, "privatizer lifecycle (§8 A9)")
    recommendation: Recommendation = option(
        Choice(Recommendation), Recommendation.SYNCHRONIZED, "statistics behind the UCB (§8 A11)"
    )
    beta_form: BetaForm = option(Choice(BetaForm), BetaForm.LEMMA1, "confidence radius: Lemma 1, or the reference's")
    beta_scale: float = option(Real(low=0), 1.0, "multiplier of the confidence radius β")
    thresholds: Thresholds = option(Choice(Thresholds), Thresholds.PRACTICAL, "deletion and merge tests (§5.2)")
    noise_in_trigger_only: bool = option(Boolean(), False, "the privatizer's noise enters the upload trigger only")
    reference_h_column: bool = option(Boolean(), False, "h is the tree noise's column d − 1, as the reference's")
    skip_unseen_users: bool = option(Boolean(), False, "no edge deletion between users not yet seen (reference)")
    merge_same_server: bool = option(Boolean(), False, "the global server may merge clusters of one local server")
    merge_rule: MergeRule = option(Choice(MergeRule), MergeRule.COMPONENTS, "when the global server merges")
    shared_statistics_defect: bool = option(Boolean(), False, "the reference code's double count (issue 15)")
    rebuild_local_copies: bool = option(Boolean(), False, "local clusters restart from their users' sums (§7.3)")
    renew_every_phase: bool = option(Boolean(), False, "renew at every phase start (the reference's Homo-DC)")
    ridge_in_recommendation_only: bool = option(Boolean(), False, "the reference Homo-DC's ridge (issue 29)")
    carry_synchronized_copies: bool = option(Boolean(), False, "the reference Homo-DC's renewal (issue 29)")
    pd_repair: PDRepair = option(Choice(PDRepair), PDRepair.CLIP, "repair of a Gram matrix not positive definite")
    refresh_every: int = option(Integer(low=0, note="0 = never"), 1000, "updates between exact refreshes of an inverse")
    tie_break: TieBreak = option(Choice(TieBreak), TieBreak.LOWEST, "rule among tied arms")

    def __post_init__(self) -> None:
        check_fields(self, choices=True)
        if self.detect_every_round and not self.synchronous:
            raise InvalidInputError("detect_every_round needs synchronous=True (the reference code's FCLUB, spec §7.6)")
        if self.shared_statistics_defect and self.synchronous:
            raise InvalidInputError(
                "shared_statistics_defect needs synchronous=False (the defect is in the reference code's "
                "asynchronous variants)"
            )
        for name in ("ridge_in_recommendation_only", "carry_synchronized_copies"):
            shifted = self.private and not self.noise_in_trigger_only  # the ρ shifts of privatized uploads
            if getattr(self, name) and (self.synchronous or shifted or self.thresholds is not Thresholds.PRACTICAL):
                raise InvalidInputError(
                    f"{name} needs synchronous=False, thresholds='practical' and the ridge as the only shift "
                    f"(private=False or noise_in_trigger_only=True), got synchronous={self.synchronous}, "
                    f"thresholds={self.thresholds.value!r}, private={self.private}, "
                    f"noise_in_trigger_only={self.noise_in_trigger_only}"
                )
        if self.noise_in_trigger_only and not self.private:
            raise InvalidInputError("noise_in_trigger_only needs private=True (it places the privatizer's noise)")
        if self.continual_release is ContinualRelease.SQRT_FACTORIZATION and self.private:
            if self.noise_variance is not NoiseVariance.ANALYTIC:
                raise InvalidInputError(
                    "continual_release = 'sqrt_factorization' needs noise_variance = 'analytic' (the paper's forms "
                    f"are the tree's), got noise_variance = {self.noise_variance.value!r}"
                )
            if self.noise_in_trigger_only or self.reference_h_column:
                raise InvalidInputError(
                    "continual_release = 'sqrt_factorization' privatizes the uploads themselves: it needs "
                    "noise_in_trigger_only = False and reference_h_column = False (the reference code's tree noise), "
                    f"got {self.noise_in_trigger_only} and {self.reference_h_column}"
                )

    @classmethod
    def for_variant(cls, variant: Variant | str, **overrides) -> FCLUBConfig:
        """The options of a named algorithm (§6.1), then ``overrides``."""
        try:
            variant = Variant(variant)
        except ValueError:
            allowed = ", ".join(repr(v.value) for v in Variant)
            raise InvalidInputError(f"variant must be one of {allowed}, got {variant!r}") from None
        preset = {
            Variant.CDP_FCLUB_DC: {},
            Variant.FCLUB_DC: {"private": False},
            Variant.FCLUB: {"private": False, "synchronous": True},
            Variant.HOMO_DC: {"private": False, "detect_clusters": False},
            Variant.HOMO: {"private": False, "synchronous": True, "detect_clusters": False},
        }[variant]
        return cls(**{**preset, **overrides})

    @classmethod
    def reference_compatible(cls, variant: Variant | str = Variant.CDP_FCLUB_DC, **overrides) -> FCLUBConfig:
        """The reference code's behaviour (§7) as far as these options express it (see report).

        Beyond spec §7 (issue 15): the reference's merge rule (:class:`MergeRule`), its double-counting
        defect in the asynchronous variants (``shared_statistics_defect``), renewal at every phase in
        Homo-DC and FCLUB's per-round detection (§7.6, ``detect_every_round``); Homo-DC's ridge-free copies
        and Eq. 5, and carried synchronized copies (issue 29: ``ridge_in_recommendation_only``,
        ``carry_synchronized_copies``;
        the other asynchronous variants already match without them). ``rebuild_local_copies``
        (§7.3) stays off: it is not needed to match the reference's regret (the fclub-reference-gap report
        measures each behaviour on and off).
        """
        base = cls.for_variant(variant)
        homo_dc = not base.detect_clusters and not base.synchronous
        rc = {
            "ridge": 2.0,
            "beta_form": BetaForm.REFERENCE,
            "beta_scale": 0.005 if base.private else 1.0,
            "recommendation": Recommendation.WITH_OWN_BUFFER,
            "skip_unseen_users": True,
            "merge_same_server": True,
            "merge_rule": MergeRule.REFERENCE,
            "shared_statistics_defect": not base.synchronous,
            "renew_every_phase": homo_dc,
            "ridge_in_recommendation_only": homo_dc,
            "carry_synchronized_copies": homo_dc,
            "detect_every_round": base.synchronous and base.detect_clusters,
        }
        if base.private:
            rc |= {
                "noise_in_trigger_only": True,
                "reference_h_column": True,
                "tree_depth": TreeDepth.REFERENCE,
                "noise_variance": NoiseVariance.REFERENCE_STD,
                "lifecycle": Lifecycle.RESET_EVERY_PHASE,
            }
        else:  # nothing drawn: named as before the default became analytic, so the preset's options stay as stored
            rc["noise_variance"] = NoiseVariance.SQUARED_LOG
        return replace(base, **{**rc, **overrides})

    @classmethod
    def from_preset(cls, variant: Variant | str, preset: str, **overrides) -> FCLUBConfig:
        """The preset ``preset`` (:data:`PRESETS`) of ``variant``, then ``overrides``."""
        if preset not in PRESETS:
            allowed = ", ".join(repr(name) for name in PRESETS)
            raise InvalidInputError(f"preset must be one of {allowed}, got {preset!r}")
        start = cls.reference_compatible if preset == "reference" else cls.for_variant
        return start(variant, **overrides)


@overload
def F(x: np.ndarray) -> np.ndarray: ...
@overload
def F(x: float) -> float: ...
def F(x: np.ndarray | float) -> np.ndarray | float:
    """``F(x) = sqrt((1 + ln(1 + x)) / (1 + x))`` of Eqs. 3 and 4."""
    return np.sqrt((1.0 + np.log1p(x)) / (1.0 + x))


class Calibration:
    """The numbers one run uses, derived once from a config and the problem size.

    Parameters
    ----------
    config : FCLUBConfig
    dim, n_users, n_servers : int
        d, n and L.

    Attributes
    ----------
    alpha, m_bound, lambda_x : float
        α (default 1/(8T)), m in the logs (default n), λ_x (default 1/d).
    """

    def __init__(self, config: FCLUBConfig, dim: int, n_users: int, n_servers: int) -> None:
        check(config, "config", Instance((FCLUBConfig,)), "Calibration")
        validate(
            "Calibration",
            {"dim": Integer(low=1), "n_users": Integer(low=1), "n_servers": Integer(low=1)},
            {"dim": dim, "n_users": n_users, "n_servers": n_servers},
        )
        self.config, self.dim, self.n_users, self.n_servers = config, dim, n_users, n_servers
        T = config.horizon
        self.alpha = config.alpha if config.alpha is not None else 1.0 / (8 * T)
        self.m_bound = config.m_bound if config.m_bound is not None else n_users
        self.lambda_x = config.lambda_x if config.lambda_x is not None else 1.0 / dim
        self.log_min_threshold = math.log(min(config.upload_threshold, config.download_threshold))
        self._mL_over_alpha = self.m_bound * n_servers / self.alpha
        self._fixed_depth = self._depth_for(T)
        self.snapped = config.private and not config.noise_in_trigger_only
        self.factorization: factorization.FactorizationNoise | None = None
        """The noise of every privatizer with ``continual_release = "sqrt_factorization"`` (None: the tree's): one
        analytic Gaussian release of ``C x + z`` over :attr:`max_releases` increments, each a sum of at most T
        snapped data of sensitivity :meth:`effective_sensitivity` (set once the data's grid is)."""
        self.coordinates = dim * (dim + 3) // 2  # one datum's x xᵀ (upper triangle) and y x
        self.data_grid = 0.0
        if self.snapped:
            deepest = self.depth(T)  # ν never decreases with the phase start: the largest σ
            self.data_grid = grid_step(snapped_std(self.form_std(deepest), REPLACE_SENSITIVITY, *self._slack()))
            check_exact(T + 3 * self.rho(deepest) + 4 * TAIL * deepest * self.noise_std(deepest), self.data_grid,
                        "FCLUB's privatized statistics")  # fmt: skip
        if self.snapped and config.continual_release is ContinualRelease.SQRT_FACTORIZATION:
            self.factorization = factorization.factorization_noise(
                config.epsilon, config.delta, self.max_releases, self.effective_sensitivity(),
                augmented_coordinates(dim), float(T),
            )  # fmt: skip

    @property
    def max_releases(self) -> int:
        """The most releases one privatizer makes, T + 1: its phase-start release and one per round it uploads (the
        t_c + 1 that the tree's depth ν = ⌈log₂(t_c + 1)⌉ + 1 is sized for, t_c ≤ T); the factorization's horizon."""
        return self.config.horizon + 1

    # -- privacy noise ---------------------------------------------------------------
    def _depth_for(self, t_phase: int) -> int:
        cfg = self.config
        if cfg.tree_depth is TreeDepth.HORIZON:
            t_max = cfg.horizon
        elif cfg.tree_depth is TreeDepth.THEORY:
            phases = max(1, (cfg.horizon + 2).bit_length() - 2)
            t_max = phases + math.ceil(self.dim * math.log(max(cfg.horizon, 2)) / self.log_min_threshold)
        else:
            return math.floor(math.log(t_phase + 1)) + 1
        return math.ceil(math.log2(t_max + 1)) + 1

    def depth(self, t_phase: int) -> int:
        """Tree depth ν for a privatizer created at phase start ``t_phase``."""
        return self._fixed_depth if self.config.tree_depth is not TreeDepth.REFERENCE else self._depth_for(t_phase)

    def form_std(self, depth: int) -> float:
        """σ of the configured printed form (``noise_variance``) for a depth-ν tree, at sensitivity 2: before the
        snapping slack (what :meth:`noise_std` draws with unsnapped data; the audit's tree)."""
        cfg = self.config
        return math.sqrt(node_variance(cfg.epsilon, cfg.delta, depth, cfg.noise_variance))

    def _slack(self) -> tuple[int, float]:
        return self.coordinates, SNAPPED_CAP

    def noise_std(self, depth: int) -> float:
        """Per-node σ_noise of a depth-ν tree (§4.2): the form's σ at sensitivity Δ = 2, recalibrated for data
        snapped to :attr:`data_grid` (:meth:`effective_sensitivity`) when the uploads are privatized."""
        if not self.snapped:
            return self.form_std(depth)
        return self.form_std(depth) / REPLACE_SENSITIVITY * self.effective_sensitivity()  # as snapped_std

    def effective_sensitivity(self) -> float:
        """``min(2 + g√n, 2√2)`` of one datum snapped to :attr:`data_grid`, n = d(d+3)/2 (the upper triangle of
        x xᵀ and y x); 2 when nothing is snapped. The grid is that of the deepest tree's σ, the coarsest, so every
        tree's noise grid divides it (a datum shifts each tree's release by whole noise steps)."""
        if not self.snapped:
            return REPLACE_SENSITIVITY
        return min(REPLACE_SENSITIVITY + self.data_grid * math.sqrt(self.coordinates), SNAPPED_CAP)

    def release_std(self, depth: int) -> float:
        """Per-entry σ of the noise one release carries at most (off the diagonal): the ν tree nodes', √ν·σ_noise;
        the factorization's at its last release, σ‖C‖_col."""
        if self.factorization is not None:
            return self.factorization.std * self.factorization.column_norm
        return math.sqrt(depth) * self.noise_std(depth)

    def compositions(self, releases: int) -> int:
        """Gaussian mechanisms a datum of a privatizer that released ``releases`` times has entered: the tree's
        levels used; the factorization's one release of ``C x + z`` (none before its first)."""
        return min(releases, 1) if self.factorization is not None else releases.bit_length()

    def release_sensitivity(self) -> float:
        """The sensitivity of each of those Gaussians to one datum: a tree node's, :meth:`effective_sensitivity`; the
        factorization's, ``Δ‖C‖_col`` plus its rows' snapping and rounding."""
        return self.factorization.sensitivity if self.factorization is not None else self.effective_sensitivity()

    def datum_releases(self, std: float, compositions: int) -> list[Release]:
        """What a datum that entered ``compositions`` of :meth:`compositions` has been through, for the accountant:
        tree nodes, Gaussians of ``std`` at :meth:`effective_sensitivity`; factorized privatizers, each its one
        release (:func:`~privbandits.privacy.factorization.releases`)."""
        if self.factorization is not None:
            return factorization.releases(self.factorization) * compositions
        return [Release.gaussian(std, self.effective_sensitivity(), compositions)]

    def rho(self, depth: int) -> float:
        """ρ of §4.2 (Eq. 7 by default), the shift that keeps noisy Gram matrices positive definite."""
        cfg, d = self.config, self.dim
        spread = 4 * math.sqrt(d) + 2 * math.log(2 * self._mL_over_alpha)
        if cfg.rho_formula is RhoFormula.CONSISTENT:
            return cfg.rho_constant * self.release_std(depth) * spread
        root = math.sqrt(2 * depth) if cfg.rho_formula is RhoFormula.EQ7 else math.sqrt(2) * depth
        return 8 * root * math.log(4 / cfg.delta) * spread / cfg.epsilon

    def kappa(self, depth: int) -> float:
        """κ = √ν·σ_noise·(√d + 2 ln(2mL/α))/√ρ (§8 A13; the factorization's σ‖C‖_col for √ν·σ_noise)."""
        spread = math.sqrt(self.dim) + 2 * math.log(2 * self._mL_over_alpha)
        return self.release_std(depth) * spread / math.sqrt(self.rho(depth))

    def shifts(self, depth: int) -> tuple[float, float]:
        """(phase-start shift, per-upload shift) of the uploaded Gram matrices: (2ρ, 3ρ) when the
        noise is uploaded, (λ, 0) otherwise (§3.4, §8 A16); (0, 0) with ``ridge_in_recommendation_only``."""
        if self.snapped:  # on the data's grid, so a release (snapped data + noise + shift) is exact
            rho = self.rho(depth)
            return float(snap_to(np.array(2 * rho), self.data_grid)), float(snap_to(np.array(3 * rho), self.data_grid))
        return (0.0 if self.config.ridge_in_recommendation_only else self.config.ridge), 0.0

    # -- confidence radius -----------------------------------------------------------
    def beta(self, count: int, sharing: int, depth: int) -> float:
        """β of the UCB for a cluster with ``count`` samples sharing with L' = ``sharing`` clusters."""
        cfg, d = self.config, self.dim
        if cfg.beta_form is BetaForm.REFERENCE:
            return cfg.beta_scale * self._reference_beta(count)
        if cfg.private and not cfg.noise_in_trigger_only:  # Lemma 1
            rho = self.rho(depth)
            rho_max = 3 * rho + 3 * rho * d * math.log(cfg.horizon) / self.log_min_threshold
            width = 2 * math.log(self._mL_over_alpha) + d * math.log(rho_max / rho + count / (d * sharing * rho))
            radius = cfg.sigma0 * math.sqrt(width) + math.sqrt(sharing * rho_max)
            return cfg.beta_scale * (radius + math.sqrt(sharing) * self.kappa(depth))
        lam = sharing * cfg.ridge  # OFUL with the L'·λI regulariser (§8 A16)
        width = 2 * math.log(1 / self.alpha) + d * math.log(1 + count / (lam * d))
        return cfg.beta_scale * (cfg.sigma0 * math.sqrt(width) + math.sqrt(lam))

    def _reference_beta(self, count: int) -> float:
        """The reference code's β (§6.3), before ``beta_scale``."""
        cfg, d, L = self.config, self.dim, self.n_servers
        if cfg.private:
            t = max(count, 1)
            rho = math.sqrt(32) * (math.log(t) + 1) * 2 * math.log(4 / cfg.delta)
            rho *= (4 * math.sqrt(d) + 2 * math.log(2 * t)) / cfg.epsilon
            spread = math.sqrt(d) + 2 * math.log(2 * t)
            upsilon = math.sqrt((math.log(t) + 1) * 2 * spread / math.sqrt(2 * cfg.epsilon))
            width = 2 * math.log(2) + d * math.log(1 + t / (d * rho))
            return math.sqrt(width) + math.sqrt(L * rho) + math.sqrt(L) * upsilon
        servers, t = (L, count + 1) if cfg.synchronous else (1, count)
        return 0.5 * math.sqrt(2 * math.log(2 / 1.5) + d * math.log(3 + t * servers**2 / d))

    # -- cluster detection -----------------------------------------------------------
    def deletion_width(self, counts: np.ndarray) -> np.ndarray:
        """Per-user half-threshold of the edge deletion: α1·F(T_i) (Eq. 3) or w(T_i) (§5.2)."""
        cfg = self.config
        if cfg.thresholds is Thresholds.PRACTICAL:
            return cfg.alpha1 * F(counts)
        lam, d = cfg.ridge, self.dim
        beta = cfg.sigma0 * np.sqrt(2 * math.log(self.n_users / self.alpha) + d * np.log1p(counts / (lam * d)))
        return (beta + math.sqrt(lam)) / np.sqrt(lam + counts * self.lambda_x / 8)

    def merge_width(self, counts: np.ndarray, depth: int) -> np.ndarray:
        """Per-local-cluster half-threshold of the global merge: α2·F(T̃) (Eq. 4) or w̃(T̃) (§5.2)."""
        cfg = self.config
        if cfg.thresholds is Thresholds.PRACTICAL:
            return cfg.alpha2 * F(counts)
        phase_shift, _ = self.shifts(depth)
        noisy = cfg.private and not cfg.noise_in_trigger_only
        rho_min = phase_shift / 2 if noisy else phase_shift
        rho0_max = 3 * rho_min if noisy else phase_shift
        kappa = self.kappa(depth) if noisy else 0.0
        width = 2 * math.log(self._mL_over_alpha) + self.dim * np.log(3 + counts / (rho_min * self.dim))
        beta = cfg.sigma0 * np.sqrt(width) + math.sqrt(rho0_max) + kappa
        return beta / np.sqrt(rho_min + counts * self.lambda_x / 8)
