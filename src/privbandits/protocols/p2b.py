"""P2B: privacy-preserving on-device bandits through encode–shuffle–analyze (spec ``p2b.md``).

Parties and messages:

* **devices** (one network name per sending user): after their t local
  interactions, users take part with probability p and send ONE tuple
  chosen by the reference rule (§2.3): with probability ``negative_rate`` a
  zero-reward tuple, otherwise a reward-1 tuple (falling back to a
  zero-reward one). Private devices send ``(code, action, reward)``; the
  non-private baseline sends the raw context instead of the code.
* :class:`Shuffler` (trusted, §2.5): anonymises (forwards no sender), shuffles
  the batch with its own randomness, and drops every tuple whose code occurs
  fewer than ``threshold`` times (crowd-blending). It records the release in
  the privacy ledger: ε(p) by Eq. (2), the smallest released crowd, u/k.
* :class:`Server` (§2.6): fits the central disjoint LinUCB model on the batch
  it receives and publishes it as the warm start for new agents.

The server only ever sees the arrays of the shuffled batch message.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from privbandits.comm import Message, Network, Party, message
from privbandits.privacy import crowd_blending
from privbandits.privacy.ledger import LedgerEntry, PrivacyLedger

PRIVACY_UNIT = "one context vector (one interaction tuple per participating user)"


@message("p2b.encoded_report")
class EncodedReport(Message):
    """Device → shuffler: one encoded interaction ``(y, a, r)``."""

    code: int
    action: int
    reward: int


@message("p2b.raw_report")
class RawReport(Message):
    """Device → server path of the non-private baseline: one raw interaction ``(x, a, r)``."""

    context: np.ndarray
    action: int
    reward: int


@message("p2b.encoded_batch")
class EncodedBatch(Message):
    """Shuffler → server: the anonymised, shuffled, thresholded tuples."""

    codes: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray


@message("p2b.raw_batch")
class RawBatch(Message):
    """Shuffler → server in the non-private baseline: anonymised, shuffled raw tuples (no thresholding)."""

    contexts: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray


@message("p2b.model")
class ModelRelease(Message):
    """Server → new agents: the central model, as two arrays (A and b, or counts and reward sums)."""

    first: np.ndarray
    second: np.ndarray


def choose_reports(
    rewards: np.ndarray, participation: float, negative_rate: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Which user sends which of its interactions (spec §2.3, reference rule), vectorised.

    ``rewards`` is the (U, t) 0/1 log of each user's own interactions. Each user
    takes part with probability ``participation``; a participant sends, with
    probability ``negative_rate``, a uniformly chosen zero-reward tuple (none
    if it has none), otherwise a uniformly chosen reward-1 tuple (a random
    zero-reward tuple if it has none). Returns (users, tuple indices) of the
    sent tuples, users ascending.
    """
    if not 0.0 <= participation <= 1.0:
        raise ValueError(f"participation must be in [0, 1], got {participation}")
    if not 0.0 <= negative_rate <= 1.0:
        raise ValueError(f"negative_rate must be in [0, 1], got {negative_rate}")
    rewards = np.asarray(rewards)
    if rewards.ndim != 2:
        raise ValueError(f"rewards must be a (users, interactions) array, got shape {rewards.shape}")
    n_users = rewards.shape[0]
    takes_part = rng.random(n_users) < participation
    wants_negative = rng.random(n_users) < negative_rate
    keys = rng.random(rewards.shape)  # a uniform choice among eligible tuples = the largest key among them
    positive = rewards > 0
    has_positive, has_negative = positive.any(axis=1), (~positive).any(axis=1)
    use_negative = wants_negative | ~has_positive
    eligible = np.where(use_negative[:, None], ~positive, positive)
    chosen = np.argmax(np.where(eligible, keys, -1.0), axis=1)
    sends = takes_part & np.where(use_negative, has_negative, True)
    users = np.flatnonzero(sends)
    return users, chosen[users]


class Shuffler(Party):
    """The trusted shuffler: anonymise, shuffle, threshold (crowd-blending), release (§2.5)."""

    def __init__(
        self,
        name: str,
        network: Network,
        *,
        threshold: int | None,
        participation: float,
        n_codes: int | None,
        rng: np.random.Generator,
        ledger: PrivacyLedger,
        omega: float | None = None,
    ) -> None:
        super().__init__(name, network)
        if threshold is not None and threshold < 1:
            raise ValueError(f"threshold must be >= 1 (or None for no thresholding), got {threshold}")
        self.threshold, self.participation, self.n_codes = threshold, participation, n_codes
        self.rng, self.ledger, self.omega = rng, ledger, omega
        self.last_release: dict[str, float] = {}

    def release_encoded(self, n_reports: int, server: str) -> None:
        """Receive ``n_reports`` encoded tuples, drop rare codes, and send the shuffled rest to ``server``."""
        reports = [self.receive(EncodedReport.kind) for _ in range(n_reports)]  # senders are not kept
        codes = np.array([r.code for r in reports], dtype=np.int64)
        actions = np.array([r.action for r in reports], dtype=np.int64)
        rewards = np.array([r.reward for r in reports], dtype=np.int64)
        order = self.rng.permutation(n_reports)
        codes, actions, rewards = codes[order], actions[order], rewards[order]
        keep = np.ones(n_reports, dtype=bool)
        if self.threshold is not None and n_reports:
            values, counts = np.unique(codes, return_counts=True)
            rare = values[counts < self.threshold]
            keep = ~np.isin(codes, rare)
        self.send(server, EncodedBatch(codes[keep], actions[keep], rewards[keep]))
        released = codes[keep]
        crowd = int(np.unique(released, return_counts=True)[1].min()) if released.size else 0
        self.last_release = {
            "received": n_reports,
            "released": int(keep.sum()),
            "dropped": int(n_reports - keep.sum()),
            "threshold": self.threshold or 0,
            "min_released_crowd": crowd,
            "optimal_crowd_u_over_k": crowd_blending.optimal_crowd(n_reports, self.n_codes) if self.n_codes else 0.0,
        }
        epsilon = crowd_blending.epsilon(self.participation)
        delta = None if self.omega is None else crowd_blending.delta(self.participation, crowd, self.omega)
        self.ledger.record(LedgerEntry("p2b.shuffler", epsilon, delta, PRIVACY_UNIT, dict(self.last_release)))

    def release_raw(self, n_reports: int, server: str) -> None:
        """Non-private baseline: forward the raw tuples anonymised and shuffled, nothing dropped (§5.1)."""
        reports = [self.receive(RawReport.kind) for _ in range(n_reports)]
        order = self.rng.permutation(n_reports)
        dim = reports[0].context.shape[0] if reports else 0
        contexts = np.array([reports[i].context for i in order]).reshape(n_reports, dim)
        actions = np.array([reports[i].action for i in order], dtype=np.int64)
        rewards = np.array([reports[i].reward for i in order], dtype=np.int64)
        self.send(server, RawBatch(contexts, actions, rewards))
        self.last_release = {"received": n_reports, "released": n_reports, "dropped": 0}
        self.ledger.record(LedgerEntry("p2b.raw_baseline", float("inf"), None, PRIVACY_UNIT, dict(self.last_release)))


class Server(Party):
    """The analyzer: fits the central model on the batch it receives and publishes it (§2.6)."""

    def __init__(self, name: str, network: Network, fit: Callable[[np.ndarray, np.ndarray, np.ndarray], tuple]) -> None:
        super().__init__(name, network)
        self.fit = fit
        self.received: Message | None = None

    def update_and_publish(self, kind: str, audience: str) -> tuple[np.ndarray, np.ndarray]:
        """Fit on the batch of ``kind`` and send the model to ``audience``; return the model arrays."""
        batch = self.receive(kind)
        self.received = batch
        first = batch.codes if isinstance(batch, EncodedBatch) else batch.contexts
        model = self.fit(first, batch.actions, batch.rewards)
        self.send(audience, ModelRelease(*model))
        return model


@dataclass(frozen=True)
class Devices:
    """Simulation glue: the network names of the users' devices, registered when they first send."""

    network: Network
    prefix: str = "device"

    def send(self, user: int, receiver: str, report: Message) -> None:
        name = f"{self.prefix}{user}"
        if name not in self.network.parties:
            self.network.register(name)
        self.network.send(name, receiver, report)
