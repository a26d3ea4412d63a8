"""End-to-end audits: each private learner and protocol driven through its public API.

Where :mod:`~privbandits.audit.tree`, :mod:`~privbandits.audit.local`, :mod:`~privbandits.audit.greedy`
and :mod:`~privbandits.audit.crowd` feed neighbouring inputs to the mechanism functions, these audits run
what a user runs: a learner's ``update()`` (or ``step()``), a protocol's parties exchanging their messages,
on two datasets that differ in one privacy unit as the docs define it, and collect what is released (the
learner's released statistics, the messages that cross the trust boundary). The claim is what the learner
or protocol itself records in its privacy ledger for that release, never a number the audit computes, so a
learner whose noise, clipping or accounting is wrong while its ledger still says ε is caught: the measured
lower bound (:func:`~privbandits.audit.stats.audit_samples`) exceeds the claim.

Neighbours include data outside the declared bounds (a reward of 1,000, a context of norm 100): clipping is
part of the mechanism. The differing datum of D is ``(100·e₁, 1000)``, which the learner clips to
``(e₁, 1)``; that of D′ is ``(e₁, −1)``. On unmodified code the pair is the worst in-bounds pair (the
released ``Σ r x`` moves by 2); a learner that skips clipping releases a difference hundreds of noise
standard deviations wide.

Each audit takes the class it drives as a keyword (``learner=``, ``shuffler=``), so the mutation suite
(:mod:`~privbandits.audit.mutants`) injects weakened subclasses at the learner and protocol level without
touching the code the audits call. No weakened copy is built here: the audits' rows in ``privbandits
audit`` have none (the mutation suite's mutants are their weakened copies, each a unit of its own).

joint_learner
    :class:`~privbandits.protocols.dp.JointDPLinUCB`: every release of a short run (its tree; as
    ``e2e.dp_linucb.joint_mf``, its square-root factorization, ``continual_release = "sqrt_factorization"``).
local_learner
    :class:`~privbandits.protocols.dp.LocalDPLinUCB`: the report one update adds to the server's sums.
shuffle_learner
    :class:`~privbandits.protocols.dp.ShuffleDPLinUCB`: what one shuffled batch adds to the server's sums.
fclub_server
    FCLUB (one local server, one user, synchronous): every upload the local server sends the global server (its
    privatizers' trees; as ``e2e.fclub.local_server_mf``, the square-root factorization,
    ``continual_release = "sqrt_factorization"``).
mpc_learner, mpc_twin
    :class:`~privbandits.protocols.mpc_bandit.PrivateEpsilonGreedy` (secret-shared, in one process) and its
    float twin: the action opened each round.
p2b_pipeline
    P2B's devices (pre-sampling), shuffler (threshold) and server: the encoded batch the server receives.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

from privbandits.audit.base import MechanismAudit, Weakening, no_pair_epsilon

FAR_CONTEXT = 100.0
"""Norm of D's differing context (outside the unit ball: clipped to norm 1)."""
FAR_REWARD = 1000.0
"""D's differing reward (outside [−1, 1]: clipped to 1)."""
RELATION = ("one datum replaced, the first of the stream: (100·e₁, 1000) in D (out of bounds: clipped to (e₁, 1)) "
            "↔ (e₁, −1) in D′; every other datum (e₁/2, 1/2)")  # fmt: skip
NOTE = "end to end through the public API; the claim is the learner's own ledger's; weakened copies: the mutation suite"


def _child(rng: np.random.Generator) -> np.random.Generator:
    return np.random.default_rng(rng.integers(2**63))


def composed(entries: Sequence[Any]) -> tuple[float, float]:
    """(Σ ε, Σ δ) of ledger entries (basic composition; a δ of None counts 0)."""
    return (float(sum(entry.epsilon for entry in entries)),
            float(sum(entry.delta or 0.0 for entry in entries)))  # fmt: skip


def _first_datum(side: int, dim: int) -> tuple[np.ndarray, float]:
    """Side 0 (D): ``(100·e₁, 1000)``; side 1 (D′): ``(e₁, −1)``."""
    x = np.zeros(dim)
    x[0] = FAR_CONTEXT if side == 0 else 1.0
    return x, (FAR_REWARD if side == 0 else -1.0)


def _later_datum(dim: int) -> tuple[np.ndarray, float]:
    x = np.zeros(dim)
    x[0] = 0.5
    return x, 0.5


def _released(learner) -> np.ndarray:
    """A DP LinUCB learner's released statistics: the Gram matrix's upper triangle and ``Σ r x``."""
    return np.concatenate([learner.gram[np.triu_indices(learner.dim)], learner.u])


def _audit(name: str, notion: str, relation: str, claim: tuple[float, float], discrete: bool, sample,
           settings: dict, dp: bool = True, note: str = NOTE) -> MechanismAudit:  # fmt: skip
    return MechanismAudit(
        name=name,
        notion=notion,
        relation=relation,
        claimed_epsilon=claim[0],
        claimed_delta=claim[1],
        discrete=discrete,
        dropped="—",
        weakened=Weakening(),
        sample=lambda n, rng, weakening: sample(n, rng),
        pair_epsilon=no_pair_epsilon,
        dp=dp,
        note=note,
        settings=settings,
    )


# -- the DP LinUCB baselines -------------------------------------------------------------------------------------------
def joint_learner(epsilon: float = 1.0, delta: float = 1e-5, horizon: int = 2, dim: int = 1,
                  learner: Callable[..., Any] | None = None,
                  continual_release: str = "tree", factorization_band: int = 0) -> MechanismAudit:  # fmt: skip
    """Joint-DP LinUCB, ``horizon`` rounds of one arm: the released (Gram, Σ r x) after every round, all of them
    (the tree's or the factorization's every release; the arms are post-processing). Claim: the run's ledger,
    composed. ``factorization_band``: the factorization's band (0: the learner's choice)."""
    from privbandits.protocols.dp import JointDPLinUCB
    from privbandits.protocols.dp.joint import ContinualRelease

    cls = learner or JointDPLinUCB
    release = ContinualRelease(continual_release)
    factorized = release is not ContinualRelease.TREE
    name = "e2e.dp_linucb.joint" + ("_mf" if factorized else "")
    options: dict[str, Any] = {"continual_release": release}
    if factorized:
        options["factorization_band"] = factorization_band or None

    def run(side: int, rng: np.random.Generator) -> tuple[np.ndarray, Any]:
        model = cls(1, dim, epsilon=epsilon, delta=delta, horizon=horizon, rng=rng, **options)
        outputs = []
        for t in range(horizon):
            x, r = _first_datum(side, dim) if t == 0 else _later_datum(dim)
            model.update(x[None], 0, r)
            outputs.append(_released(model))
        return np.concatenate(outputs), model

    def sample(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        out = [np.stack([run(side, _child(rng))[0] for _ in range(n)]) for side in (0, 1)]
        return out[0], out[1]

    probe = run(0, np.random.default_rng(0))[1]
    band = {"band": probe.factorization_noise.bandwidth} if factorized else {}
    return _audit(name, "(ε, δ)-joint DP of the run (its released statistics)", RELATION,
                  composed(probe.ledger.entries), False, sample,
                  {"epsilon": epsilon, "delta": delta, "horizon": horizon, "dim": dim,
                   "noise_std": probe.noise_std, "calibration": str(probe.noise_calibration),
                   "continual_release": str(release),
                   **band})  # fmt: skip


def _per_report(learner, n: int, per_sample: Callable[[], None]) -> tuple[np.ndarray, float, float]:
    """``n`` samples from one learner: what each call of ``per_sample`` adds to its released statistics, and the
    ledger's composed (ε, δ) per sample (what it recorded over the n, divided by n)."""
    before, outputs = len(learner.ledger.entries), []
    for _ in range(n):
        start = _released(learner)
        per_sample()
        outputs.append(_released(learner) - start)
    epsilon, delta = composed(learner.ledger.entries[before:])
    return np.stack(outputs), epsilon / n, delta / n


def local_learner(epsilon: float = 1.0, delta: float = 1e-5, dim: int = 1,
                  learner: Callable[..., Any] | None = None) -> MechanismAudit:  # fmt: skip
    """Local-DP LinUCB: the report one user's ``update()`` adds to the server's sums (each user reports once).
    Claim: the ledger's entries per report."""
    from privbandits.protocols.dp import LocalDPLinUCB

    cls = learner or LocalDPLinUCB

    def side_samples(side: int, n: int, rng: np.random.Generator) -> tuple[np.ndarray, float, float]:
        model = cls(1, dim, epsilon=epsilon, delta=delta, horizon=max(n, 1), rng=rng)
        x, r = _first_datum(side, dim)
        return _per_report(model, n, lambda: model.update(x[None], 0, r))

    def sample(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        return side_samples(0, n, _child(rng))[0], side_samples(1, n, _child(rng))[0]

    _, claim_epsilon, claim_delta = side_samples(0, 2, np.random.default_rng(0))
    probe = cls(1, dim, epsilon=epsilon, delta=delta, horizon=1, rng=0)
    return _audit("e2e.dp_linucb.local", "(ε, δ)-local DP per report", RELATION.split("; every")[0],
                  (claim_epsilon, claim_delta), False, sample,
                  {"epsilon": epsilon, "delta": delta, "dim": dim, "noise_std": probe.noise_std,
                   "calibration": str(probe.noise_calibration)})  # fmt: skip


def shuffle_learner(epsilon: float = 1.0, delta: float = 1e-5, batch_size: int = 2, dim: int = 1,
                    learner: Callable[..., Any] | None = None) -> MechanismAudit:  # fmt: skip
    """Shuffle-DP LinUCB: what one shuffled batch adds to the server's sums; the target is the batch's first
    user, the others report ``(e₁, 1)``. Claim: the ledger's entries per batch (its central ε)."""
    from privbandits.protocols.dp import ShuffleDPLinUCB

    cls = learner or ShuffleDPLinUCB

    def side_samples(side: int, n: int, rng: np.random.Generator) -> tuple[np.ndarray, float, float]:
        model = cls(1, dim, epsilon=epsilon, delta=delta, horizon=max(n * batch_size, 1), batch_size=batch_size,
                    rng=rng)  # fmt: skip
        target, clone = _first_datum(side, dim), (np.eye(dim)[0], 1.0)

        def batch() -> None:
            for x, r in [target] + [clone] * (batch_size - 1):
                model.update(x[None], 0, r)

        return _per_report(model, n, batch)

    def sample(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        return side_samples(0, n, _child(rng))[0], side_samples(1, n, _child(rng))[0]

    _, claim_epsilon, claim_delta = side_samples(0, 2, np.random.default_rng(0))
    probe = cls(1, dim, epsilon=epsilon, delta=delta, horizon=1, batch_size=batch_size, rng=0)
    amplified = "amplified" if probe.calibration.amplified else "not amplified: local DP"
    return _audit("e2e.dp_linucb.shuffle", f"(ε, δ)-DP of one shuffled batch of {batch_size} ({amplified})",
                  f"one user's report replaced: (100·e₁, 1000) ↔ (e₁, −1); the other {batch_size - 1} report (e₁, 1)",
                  (claim_epsilon, claim_delta), False, sample,
                  {"epsilon": epsilon, "delta": delta, "batch_size": batch_size, "dim": dim,
                   "noise_std": probe.noise_std, "amplified": probe.calibration.amplified,
                   "calibration": str(probe.noise_calibration)})  # fmt: skip


# -- FCLUB's local server ----------------------------------------------------------------------------------------------
def fclub_server(epsilon: float = 1.0, delta: float = 0.1, horizon: int = 4, dim: int = 1,
                 noise_variance: str = "squared_log", continual_release: str = "tree",
                 bandit: Callable[..., Any] | None = None) -> MechanismAudit:  # fmt: skip
    """FCLUB, one local server holding one user, synchronous (an upload every round) for ``horizon`` rounds: every
    :class:`~privbandits.protocols.fclub.messages.Upload` the local server sends (the messages that leave it).
    Claim: its ledger, per privatizer (the paper's Thm 3: the ε of each privatizer, composed over privatizers).
    ``continual_release = "sqrt_factorization"`` needs ``noise_variance = "analytic"``."""
    from privbandits.comm import InMemoryNetwork
    from privbandits.protocols.fclub.config import ContinualRelease, FCLUBConfig, NoiseVariance
    from privbandits.protocols.fclub.driver import FederatedClusteredBandit
    from privbandits.protocols.fclub.messages import Upload

    cls = bandit or FederatedClusteredBandit
    config = FCLUBConfig(epsilon=epsilon, delta=delta, horizon=horizon, synchronous=True, detect_clusters=False,
                         noise_variance=NoiseVariance(noise_variance),
                         continual_release=ContinualRelease(continual_release))  # fmt: skip

    def run(side: int, rng: np.random.Generator) -> tuple[np.ndarray, Any]:
        network = InMemoryNetwork(record=True)
        protocol = cls(config, np.zeros(1, dtype=np.int64), dim, 1, rng=rng, network=network)
        for t in range(horizon):
            x, r = _first_datum(side, dim) if t == 0 else _later_datum(dim)
            protocol.select(0, x[None])
            protocol.update(float(r))
        uploads = [e.message for e in network.transcript if isinstance(e.message, Upload)]
        flat = [np.concatenate([u.gram[np.triu_indices(dim)], u.moment]) for u in uploads]
        return np.concatenate(flat) if flat else np.zeros(0), protocol

    def sample(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        out = [np.stack([run(side, _child(rng))[0] for _ in range(n)]) for side in (0, 1)]
        return out[0], out[1]

    probe = run(0, np.random.default_rng(0))[1]
    per_privatizer: dict[str, Any] = {}
    for entry in probe.ledger.entries:
        key = entry.details.get("privatizer", entry.mechanism)
        if key not in per_privatizer or entry.epsilon > per_privatizer[key].epsilon:
            per_privatizer[key] = entry
    factorized = continual_release == "sqrt_factorization"
    options = {"epsilon": epsilon, "delta": delta, "horizon": horizon, "dim": dim, "noise_variance": noise_variance,
               "privatizers": len(per_privatizer)}  # fmt: skip
    options |= {"continual_release": continual_release} if factorized else {}
    return _audit("e2e.fclub.local_server_mf" if factorized else "e2e.fclub.local_server",
                  "(ε, δ)-DP per privatizer (Thm 3), composed over the privatizers", RELATION,
                  composed(list(per_privatizer.values())), False, sample, options)  # fmt: skip


# -- the MPC ε-greedy learner ------------------------------------------------------------------------------------------
WARM_UP = 12
"""Rounds before sampling: the rewarded arm has been pulled and is greedy from then on (rewards 1 on it, 0 else)."""
MPC_RELATION = ("any change of history: arm 0 rewarded (D) ↔ arm 1 rewarded (D′), so the greedy arm moves; the "
                "context (0.6, 0) every round")  # fmt: skip


def _greedy_samples(model, n: int, best: int) -> tuple[np.ndarray, float, float]:
    x = np.zeros(model.config.dim)
    x[0] = 0.6
    pull = lambda arm: 1.0 if arm == best else 0.0  # noqa: E731
    for _ in range(WARM_UP):
        model.step(x, pull)
    ledger = getattr(model, "ledger", None)
    before = len(ledger.entries) if ledger is not None else 0
    arms = np.array([[model.step(x, pull)] for _ in range(n)], dtype=np.int64)
    if ledger is None:  # the float twin keeps no ledger: its declared loss per action
        return arms, model.config.privacy_loss, 0.0
    epsilon, delta = composed(ledger.entries[before:])
    return arms, epsilon / n, delta / n


def _mpc_audit(name: str, default: Callable[..., Any], n_arms: int, exploration: float,
               learner: Callable[..., Any] | None) -> MechanismAudit:  # fmt: skip
    from privbandits.protocols.mpc_bandit import MPCBanditConfig

    cls = learner or default
    config = MPCBanditConfig(n_arms=n_arms, partition=(1, 1), epsilon=exploration)

    def side(best: int, n: int, rng: np.random.Generator) -> tuple[np.ndarray, float, float]:
        return _greedy_samples(cls(config, seed=int(rng.integers(2**62))), n, best)

    def sample(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        return side(0, n, rng)[0], side(1, n, rng)[0]

    _, claim_epsilon, claim_delta = side(0, 4, np.random.default_rng(0))
    return _audit(name, "ε-DP per opened action (η of Theorem 1)", MPC_RELATION, (claim_epsilon, claim_delta), True,
                  sample, {"n_arms": n_arms, "exploration": exploration})  # fmt: skip


def mpc_learner(n_arms: int = 2, exploration: float = 0.5,
                learner: Callable[..., Any] | None = None) -> MechanismAudit:  # fmt: skip
    """The secret-shared ε-greedy learner (all parties in one process), ``step()`` after step: the opened action.
    Claim: its ledger's entries per action."""
    from privbandits.protocols.mpc_bandit import PrivateEpsilonGreedy

    return _mpc_audit("e2e.mpc_bandit.learner", PrivateEpsilonGreedy, n_arms, exploration, learner)


def mpc_twin(n_arms: int = 2, exploration: float = 0.5,
             learner: Callable[..., Any] | None = None) -> MechanismAudit:  # fmt: skip
    """The float twin of the ε-greedy learner (in process, no MPC), on the same rule: the chosen action.
    Claim: its configuration's declared loss per action (it keeps no ledger)."""
    from privbandits.protocols.mpc_bandit import PlaintextEpsilonGreedy

    return _mpc_audit("e2e.mpc_bandit.twin", PlaintextEpsilonGreedy, n_arms, exploration, learner)


# -- P2B ---------------------------------------------------------------------------------------------------------------
def p2b_pipeline(participation: float = 0.5, threshold: int = 10, n_codes: int = 4,
                 shuffler: Callable[..., Any] | None = None) -> MechanismAudit:  # fmt: skip
    """P2B's pipeline: ``threshold`` users share code 0; the target (D) holds code 1 alone, or is absent (D′).
    Devices take part with probability p (pre-sampling, :func:`~privbandits.protocols.p2b.core.choose_reports`),
    send through their host to the shuffler, which thresholds and releases to the server; the released output is
    how often the target's code is in the batch the server receives. Crowd-blending protects exactly this
    pair (a crowd of one is never released): the claim is the shuffler's ledger ε(p)."""
    from privbandits.comm import InMemoryNetwork
    from privbandits.privacy.ledger import PrivacyLedger
    from privbandits.protocols.p2b.core import DeviceHost, EncodedBatch, EncodedReport, Server, Shuffler, choose_reports

    cls = shuffler or Shuffler

    def run(present: bool, rng: np.random.Generator) -> tuple[int, Any]:
        network = InMemoryNetwork()
        codes = np.array([0] * threshold + ([1] if present else []))
        host = DeviceHost("host", network)
        shuffle = cls("shuffler", network, threshold=threshold, participation=participation, n_codes=n_codes,
                      rng=_child(rng), ledger=PrivacyLedger())  # fmt: skip
        Server("server", network, 1, participation=participation)
        users, _ = choose_reports(np.ones((len(codes), 1)), participation, 0.0, rng)
        with network.phase("share_encoded"):
            for user in users:
                host.send_report(int(user), "shuffler", EncodedReport(int(codes[user]), 0, 1))
            host.close_batch("shuffler")
            shuffle.release_encoded("server")
            batch = network.receive("server", EncodedBatch)
        return int(np.count_nonzero(batch.codes == 1)), shuffle

    def sample(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        out = [np.array([[run(present, rng)[0]] for _ in range(n)], dtype=np.int64) for present in (True, False)]
        return out[0], out[1]

    probe = run(True, np.random.default_rng(0))[1]
    return _audit("e2e.p2b.pipeline", "crowd-blending: a code held by fewer than l users is never released (ε(p))",
                  f"one user added: the target alone holds its code, {threshold} others share another",
                  composed(probe.ledger.entries), True, sample,
                  {"participation": participation, "threshold": threshold, "n_codes": n_codes},
                  note=NOTE + "; P2B is not DP (see p2b.crowd_blending): this pair checks its threshold")  # fmt: skip


AUDITS: dict[str, Callable[..., MechanismAudit]] = {
    "e2e.dp_linucb.joint": joint_learner,
    "e2e.dp_linucb.joint_mf": partial(  # banded, as the learner's choice mostly is
        joint_learner, continual_release="sqrt_factorization", horizon=4, factorization_band=2
    ),
    "e2e.dp_linucb.local": local_learner,
    "e2e.dp_linucb.shuffle": shuffle_learner,
    "e2e.fclub.local_server": fclub_server,
    "e2e.fclub.local_server_mf": partial(
        fclub_server, noise_variance="analytic", continual_release="sqrt_factorization"
    ),
    "e2e.mpc_bandit.learner": mpc_learner,
    "e2e.mpc_bandit.twin": mpc_twin,
    "e2e.p2b.pipeline": p2b_pipeline,
}
"""The end-to-end audits by name, with their default options (``privbandits audit -o KEY=VALUE`` sets others)."""

SAMPLES = {"e2e.dp_linucb.joint": 10_000, "e2e.dp_linucb.joint_mf": 10_000, "e2e.dp_linucb.local": 20_000,
           "e2e.dp_linucb.shuffle": 10_000, "e2e.fclub.local_server": 10_000, "e2e.fclub.local_server_mf": 10_000,
           "e2e.mpc_bandit.learner": 10_000,
           "e2e.mpc_bandit.twin": 20_000, "e2e.p2b.pipeline": 10_000}  # fmt: skip
"""Samples per side at full size (each a run, a report, a batch or an action of the learner's own code). At these
sizes a Gaussian mechanism's bound at δ = 1e-5 stays well below a tight claim (reaching it needs millions of runs);
what they show is that no claim is refuted, and the mutation suite shows the same audits catch weakened copies."""
QUICK_SAMPLES = {"e2e.dp_linucb.joint": 300, "e2e.dp_linucb.joint_mf": 300, "e2e.dp_linucb.local": 2_000,
                 "e2e.dp_linucb.shuffle": 1_000, "e2e.fclub.local_server": 200, "e2e.fclub.local_server_mf": 200,
                 "e2e.mpc_bandit.learner": 250,
                 "e2e.mpc_bandit.twin": 2_000, "e2e.p2b.pipeline": 1_000}  # fmt: skip
"""Samples per side of ``privbandits audit --quick``."""
