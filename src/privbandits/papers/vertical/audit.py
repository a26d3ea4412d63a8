"""Privacy audit of O3M (beyond the paper, spec §6): what the active party learns from real transcripts.

The paper's only privacy argument is Theorem 4.2. One task runs the protocol with recorded
transcripts (individual messages, secure aggregation, and non-Gaussian features for ICA), attacks
what the active party received, and scores the attacks against passive party 2's raw features
(which the active party does not know); the report turns those scores into claims and a figure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np

from privbandits.comm import InMemoryNetwork
from privbandits.experiments.paper import Claim, PaperReport
from privbandits.experiments.tasks import Task
from privbandits.linear import LinUCB
from privbandits.papers.vertical import reference
from privbandits.papers.vertical.options import AuditOptions
from privbandits.papers.vertical.synthetic import even_partition, unit_rows
from privbandits.privacy.leakage import (
    gram_from_masked,
    ica_unmix,
    matched_correlation,
    recover_mask_block,
    subspace_distance,
    subspace_from_masked,
    unmask,
)
from privbandits.protocols.vertical.core import (
    AggregationShare,
    MaskedContexts,
    VerticalFederatedBandit,
    from_fixed_point,
)

_FN = "privbandits.papers.vertical.audit"
LABEL = "audit"


def _transcript_run(contexts: np.ndarray, partition: list[int], secure: bool, seed: int) -> VerticalFederatedBandit:
    """Run VFUCB over ``contexts`` (rounds, K, d) with a recorded transcript; rewards are irrelevant here."""
    n_arms, dim = contexts.shape[1:]
    network = InMemoryNetwork(record=True)
    policy = VerticalFederatedBandit(
        partition, LinUCB(n_arms, dim), rng=np.random.default_rng(seed), secure_aggregation=secure, network=network
    )
    for round_contexts in contexts:
        policy.update(round_contexts, policy.select(round_contexts), 0.0)
    return policy


def _received(
    policy: VerticalFederatedBandit, sender: str | None, kind: type[MaskedContexts] | type[AggregationShare]
) -> np.ndarray:
    """The payload arrays of ``kind`` the active party received (from ``sender``), stacked by round."""
    assert isinstance(policy.network, InMemoryNetwork), "the audit's network records (InMemoryNetwork(record=True))"
    received = [
        e.message
        for e in policy.network.transcript
        if e.receiver == policy.active.name and isinstance(e.message, kind) and (sender is None or e.sender == sender)
    ]
    return np.stack([m.blocks if isinstance(m, MaskedContexts) else m.share for m in received])


def _known_plaintext_curve(raw: np.ndarray, view: np.ndarray, truth: np.ndarray, d_j: int) -> dict[str, list[float]]:
    """Mask error and held-out unmasking error after n = 1 … 2·d_j known (x, view) pairs."""
    held_out = slice(2 * d_j, None)
    mask_errors, unmask_errors = [], []
    for n in range(1, 2 * d_j + 1):
        estimate = recover_mask_block(raw[:n], view[:n])
        mask_errors.append(float(np.max(np.abs(estimate - truth))))
        recovered = unmask(estimate, view[held_out])
        unmask_errors.append(float(np.sqrt(np.mean(np.sum((recovered - raw[held_out]) ** 2, axis=1)))))
    return {"mask": mask_errors, "unmask": unmask_errors}


def attack(rounds: int, dim: int, n_arms: int, n_parties: int, seed: int) -> dict[str, Any]:
    """Task: run the protocol three ways with recorded transcripts and score every attack on party 2."""
    partition = even_partition(dim, n_parties)
    d_j, block = partition[1], slice(partition[0], partition[0] + partition[1])
    rng = np.random.default_rng(seed)
    gaussian = unit_rows(rng, (rounds, n_arms, dim))
    uniform = gaussian.copy()
    uniform[:, :, block] = rng.uniform(-1, 1, (rounds, n_arms, d_j))  # independent non-Gaussian features
    plain = _transcript_run(gaussian, partition, secure=False, seed=seed)
    secure = _transcript_run(gaussian, partition, secure=True, seed=seed)
    ica_run = _transcript_run(uniform, partition, secure=False, seed=seed)
    raw = gaussian[:, :, block].reshape(-1, d_j)
    seen = _received(plain, "passive2", MaskedContexts).reshape(-1, dim)
    shares = _received(secure, None, AggregationShare).reshape(rounds, n_parties - 1, n_arms, dim)
    sums = from_fixed_point(shares.sum(axis=1, dtype=np.uint64)).reshape(-1, dim)  # the AP's only view: the sum
    secure_block = secure.mask[:, block]
    others = gaussian[:, :, partition[0] :].reshape(-1, dim - partition[0])
    joint = recover_mask_block(others[: dim - partition[0]], sums[: dim - partition[0]])
    ica_seen = _received(ica_run, "passive2", MaskedContexts).reshape(-1, dim)
    return {
        "d_j": d_j,
        "pairs": len(raw),
        "gram_error": float(np.max(np.abs(gram_from_masked(seen[:500]) - raw[:500] @ raw[:500].T))),
        "span_error": float(subspace_distance(subspace_from_masked(seen, d_j), plain.mask[:, block])),
        "plain": _known_plaintext_curve(raw, seen, plain.mask[:, block], d_j),
        "secure": _known_plaintext_curve(raw, sums, secure_block, d_j),
        "all_pairs_error": float(np.max(np.abs(recover_mask_block(raw, sums) - secure_block))),
        "joint_error": float(np.max(np.abs(joint - secure.mask[:, partition[0] :]))),
        "ica_score": float(matched_correlation(ica_unmix(ica_seen, d_j, rng), uniform[:, :, block].reshape(-1, d_j))),
        "ica_control": float(matched_correlation(ica_unmix(seen, d_j, rng), raw)),
        "share_error": float(np.max(np.abs(from_fixed_point(shares[:, 0]).reshape(-1, dim) - raw @ secure_block.T))),
        "sum_gram_gap": float(np.max(np.abs(gram_from_masked(sums[:500]) - raw[:500] @ raw[:500].T))),
    }


def tasks(options: AuditOptions) -> list[Task]:
    """One task: the whole audit at the options' size and seed."""
    return [Task(f"{_FN}:attack", options.model_dump(), LABEL)]


def _figure(result: dict[str, Any], out: Path, paper: PaperReport) -> None:
    d_j = result["d_j"]
    counts = np.arange(1, 2 * d_j + 1)
    fig, ax = plt.subplots(figsize=(7.5, 4.8), dpi=110)
    ax.semilogy(counts, result["plain"]["mask"], "o-", label="Alg. 1 (individual messages): max |Q̂ʲ − Qʲ|")
    ax.semilogy(counts, result["plain"]["unmask"], "s--", label="Alg. 1: RMS error unmasking held-out vectors")
    ax.semilogy(counts, result["secure"]["mask"], "o-", label="secure aggregation: max |Q̂ʲ − Qʲ|")
    ax.semilogy(counts, result["secure"]["unmask"], "s--", label="secure aggregation: RMS unmasking error")
    ax.axvline(d_j, color="grey", linestyle=":", label=f"d_j = {d_j}")
    ax.set(
        xlabel="known (x, Qʲx) pairs of passive party 2",
        ylabel="error",
        title="Known-plaintext attack on a passive party's mask block",
    )
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    paper.add_figure(fig, out / "vertical-audit.png")


def _claims(options: AuditOptions, result: dict[str, Any]) -> list[Claim]:
    d_j, pairs, plain, secure = result["d_j"], result["pairs"], result["plain"], result["secure"]
    at = d_j - 1  # index of n = d_j known pairs in the curves (n = 1, 2, …)
    passive = options.dim - options.dim // options.n_parties
    return [
        Claim(
            "Thm 4.2",
            "the AP cannot recover a passive party's raw x^j without knowing Q^j",
            reference.THEOREM_4_2,
            f"from {d_j} known pairs the AP recovers Q^j to {plain['mask'][at]:.1e} and unmasks "
            f"{pairs - 2 * d_j} other vectors to RMS error {plain['unmask'][at]:.1e}; with {d_j - 1} pairs "
            f"the error is {plain['mask'][at - 1]:.2f}",
            "weaker than it sounds",
        ),
        Claim(
            "§4.3 [V2]",
            "rotation hides the data distribution",
            reference.ROTATION_HIDES,
            f"ICA on the messages alone recovers independent uniform features with mean |corr| "
            f"{result['ica_score']:.3f} (Gaussian features: {result['ica_control']:.3f}, nothing learned)",
            "not true for non-Gaussian features",
        ),
        Claim(
            "—",
            "what the AP learns from each passive party's messages",
            "not discussed",
            f"every norm and inner product exactly (max |Gram error| {result['gram_error']:.1e}); span(Q^j) "
            f"(sin of largest principal angle {result['span_error']:.1e})",
            "leaks geometry",
        ),
        Claim(
            "extension",
            "secure aggregation (AP sees only the sum over passive parties)",
            "—",
            f"one share alone is noise (max error {result['share_error']:.1e}); Gram of the sums differs from "
            f"party 2's by {result['sum_gram_gap']:.2f}; {d_j} pairs of party 2 give mask error "
            f"{secure['mask'][at]:.2f}",
            "per-party leakage removed",
        ),
        Claim(
            "extension",
            "what secure aggregation does not remove",
            "—",
            f"with all {pairs} known pairs of party 2 alone, error {result['all_pairs_error']:.2f} "
            f"(others' features act as noise); with {passive} pairs of all passive parties jointly, "
            f"[Q^2..Q^M] to {result['joint_error']:.1e}",
            "residual leakage",
        ),
    ]


def report(options: AuditOptions, points: dict[str, dict[str, Any]], out: Path) -> PaperReport:
    """What the active party learns from real O3M transcripts, with and without secure aggregation."""
    result = points[LABEL]
    paper = PaperReport(
        "vertical-audit",
        f"Privacy audit of O3M (beyond the paper): d={options.dim}, K={options.n_arms}, M={options.n_parties}",
    )
    _figure(result, out, paper)
    paper.claims += _claims(options, result)
    paper.notes += [
        f"Transcripts of {options.rounds} rounds × {options.n_arms} arms of the real protocol "
        "(InMemoryNetwork(record=True)); the attacks use only what the active party received, the raw features "
        "only to score them.",
        "Known pairs model users whose party-2 attributes the AP also knows (spec §6 item 2).",
        "Leakage that remains in every mode: d_j (the message layout), and which user is served when (the control "
        "message); PMG + AP collusion breaks everything (excluded by the paper's assumption).",
    ]
    return paper
