"""What an operator sees of a deployment: one party's lines (``party run``) and ``deploy local``'s summary.

``party run`` prints, on stderr, one line once every link is up (its peers and their addresses),
progress while it runs (round, rounds per second, bytes sent and received; a line rewritten in
place on a terminal, or one line every :data:`EVERY_S` seconds with ``--progress``), and an
outcome line naming its result file. ``deploy local``'s summary has a row per party and per link
between parties, however many devices there are: the devices of a device host (``HOST-deviceUSER``,
one TLS connection each) are counted together, as ``HOST devices``
(:func:`~privbandits.comm.oneshot.devices_of`).
"""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from privbandits.comm.oneshot import devices_of

if TYPE_CHECKING:
    from privbandits.comm import LinkCounts

EVERY_S = 1.0
"""Seconds between progress lines when stderr is not a terminal (``--progress``)."""
TERMINAL_EVERY_S = 0.2
"""Seconds between rewrites of the progress line on a terminal."""


def megabytes(size: int) -> str:
    return f"{size / 1e6:.1f} MB" if size >= 100_000 else f"{size / 1e3:.1f} kB"


def linked_line(name: str, addresses: dict[str, str], peers: set[str]) -> str:
    """``NAME: linked to A (host:port), B (host:port)`` in file order (``addresses``: every party's)."""
    linked = [f"{peer} ({address})" for peer, address in addresses.items() if peer in peers and peer != name]
    return f"{name}: linked to {', '.join(linked) or 'no peer'}"


def outcome_line(name: str, result: dict, path: Path, seconds: float) -> str:
    """``NAME: done in S s (WHAT); result PATH``: rounds and reward or the protocol's own outcome, if any."""
    what = []
    if "cumulative_reward" in result:
        what.append(f"{result.get('rounds', '?')} rounds, cumulative reward {result['cumulative_reward']:.2f}")
        if "cumulative_regret" in result:
            what.append(f"regret {result['cumulative_regret']:.2f}")
    elif "outcome" in result:
        what.append(str(result["outcome"]))
    if "randomness" in result:  # what the party's secret randomness came from (OS entropy or the seed)
        what.append(f"randomness: {result['randomness']}")
    detail = f" ({', '.join(what)})" if what else ""
    return f"{name}: done in {seconds:.1f} s{detail}; result {path}"


class PartyConsole:
    """One party's lines on ``stream``: linked, progress (``show_progress``), outcome."""

    def __init__(self, name: str, addresses: dict[str, str], stream: TextIO, *, show_progress: bool) -> None:
        self.name, self.addresses, self.stream = name, addresses, stream
        self.terminal = show_progress and stream.isatty()
        self.show_progress = show_progress
        self.every = TERMINAL_EVERY_S if self.terminal else EVERY_S
        self.network = None
        self.started = self.linked_at = time.monotonic()
        self.shown_at = -float("inf")
        self.pending = False

    def _print(self, line: str) -> None:
        if self.pending:  # end the progress line rewritten in place
            self.stream.write("\n")
            self.pending = False
        self.stream.write(line + "\n")
        self.stream.flush()

    def linked(self, network) -> None:
        self.network, self.linked_at = network, time.monotonic()
        self._print(linked_line(self.name, self.addresses, set(network.parties)))

    def _bytes(self) -> tuple[int, int]:
        links: list[tuple[tuple[str, str, str], LinkCounts]] = (
            list(self.network.wire.links.items()) if self.network is not None else []
        )
        sent = sum(counts.bytes for (_, sender, _), counts in links if sender == self.name)
        received = sum(counts.bytes for (_, _, receiver), counts in links if receiver == self.name)
        return sent, received

    def progress_text(self, t: int, total: int, now: float) -> str:
        elapsed = max(now - self.linked_at, 1e-9)
        sent, received = self._bytes()
        return (
            f"{self.name}: round {t}/{total}, {t / elapsed:.1f} rounds/s, "
            f"{megabytes(sent)} sent, {megabytes(received)} received"
        )

    def round(self, t: int, total: int) -> None:
        if not self.show_progress:
            return
        now = time.monotonic()
        if now - self.shown_at < self.every and t != total:
            return
        self.shown_at = now
        if self.terminal:
            self.stream.write("\r" + self.progress_text(t, total, now) + "\x1b[K")
            self.stream.flush()
            self.pending = True
        else:
            self._print(self.progress_text(t, total, now))

    def done(self, result: dict, path: Path) -> None:
        self._print(outcome_line(self.name, result, path, time.monotonic() - self.started))

    def failed(self, message: str) -> None:
        self._print(f"party {self.name!r}: {message}")


def link_summary(results: dict[str, dict]) -> list[tuple[str, str, str, int, int, int | str, int]]:
    """Per (phase, sender, receiver), a host's devices counted together (``HOST devices``): messages, payload
    bytes, wire bytes (as the sender counted them; "" where no party sent them) and rounds, from the parties' result
    files."""
    traffic: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    wire: dict[tuple[str, str, str], int] = defaultdict(int)
    for name, result in results.items():
        for phase, sender, receiver, _, size, _ in result["wire"]:
            if sender in (name, devices_of(name)):
                wire[(phase, sender, receiver)] += size
        for phase, sender, receiver, messages, size, rounds in result["traffic"]:
            totals = traffic[(phase, sender, receiver)]
            totals[0] += messages
            totals[1] += size
            totals[2] = max(totals[2], rounds)
    return [
        (phase, sender, receiver, messages, size, wire.get((phase, sender, receiver), ""), rounds)
        for (phase, sender, receiver), (messages, size, rounds) in sorted(traffic.items())
    ]
