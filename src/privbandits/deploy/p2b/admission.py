"""Which devices a P2B shuffler takes reports from (issue 48, item 2), and each device host's commitment to its coins.

A device's connection is vouched for by its host's certificate and names the device ``HOST-deviceUSER``; the
certificate alone lets a host name any device it likes. The shuffler therefore admits a report only from a device
the deployment gives that host: the users of the host's block (:func:`~privbandits.deploy.p2b.data.layout`, the
same legitimate set the canonical batch order is computed from), at most one report per device and batch (the
queue keys each report by its device). Everything else is refused, counted by reason in :attr:`Admission.refused`,
and logged one line each (the network's ``dropped`` reasons):

* ``invented``: a device name that is no user of any host (a number past the population, or no number);
* ``foreign``: a user of another host's block, under this host's name;
* ``duplicate``: a second, different report of a device already heard in the batch (the same report sent again,
  its acknowledgement lost, is acknowledged and not taken);
* ``commitment``: a report carrying another commitment to its host's coins than the host made at the start (below).

Why the layout and not per-device credentials: the deployment already fixes each host's users (its data file and
the canonical order rest on them), so the set needs no new secret, no issuing step and nothing for a device to
keep; a host can still make up reports for its own users (it plays their devices), but only one per user and
batch, and never more users than it has. The ledger's smallest crowd is then a crowd of admitted devices only.

Commitment: a device host's coins come from its own OS seed (kept for ``--resume`` in its entropy file). At the
start of the session it sends the shuffler :class:`~privbandits.deploy.p2b.messages.HostCommit`, a digest of that
seed (:func:`commitment`; the seed itself cannot be recovered from it). A host restarted without its state (no
``--resume``, or with another host's entropy file) draws other coins and commits to another digest: its party link
replays its messages and the shuffler's link checks each replayed message against the first (a mismatch ends the
session with exit 4 and one line naming the host). Each device's report carries its host's commitment too, and the
shuffler refuses one under another commitment (``commitment``) before storing it: a report of the other coins that
reaches the shuffler before it reads the host's replay is never stored, so it is not mixed in even after a resume.
"""

from __future__ import annotations

import hashlib
import logging
import re

import numpy as np

from privbandits.deploy.deployment import Deployment
from privbandits.deploy.p2b.section import P2BProtocol

log = logging.getLogger("privbandits.deploy.p2b.admission")

REASONS = ("invented", "foreign", "duplicate", "commitment")
"""Why a report is refused, as :attr:`Admission.refused` counts them."""
_NUMBER = re.compile(r"-device(\d+)$")


def admitted_devices(deployment: Deployment[P2BProtocol], *, served: bool = False) -> dict[str, str]:
    """Each admitted device's name (``HOST-deviceUSER``) and its host: the early users of each host's block; with
    ``served`` (``privbandits serve``, where late users report too) also its late users, numbered after every early
    user (``n_early + i``, as the served devices are)."""
    from privbandits.deploy.p2b.data import layout

    devices = {}
    for host, block in layout(deployment).items():
        users = [*block.early, *(block.n_early + user for user in block.late)] if served else block.early
        devices.update({f"{host}-device{user}": host for user in users})
    return devices


def commitment(root: np.random.SeedSequence, host: str) -> str:
    """Host ``host``'s commitment to its root seed: a keyed digest (hex) that names neither the seed nor any coin."""
    entropy = np.atleast_1d(np.asarray(root.entropy, dtype=object)).tolist()
    material = ",".join(str(int(word)) for word in entropy).encode()
    return hashlib.blake2b(material, key=host.encode()[:64], person=b"p2b-host-commit", digest_size=16).hexdigest()


class Admission:
    """The shuffler's admission of devices (see the module doc): :meth:`check` each report's sender, :meth:`refuse`
    what the queue refuses, :attr:`refused` by reason."""

    def __init__(self, devices: dict[str, str]) -> None:
        self.devices = devices
        self.owner = {int(match.group(1)): host for name, host in devices.items() if (match := _NUMBER.search(name))}
        """Each admitted user number's host (to tell a foreign device from an invented one)."""
        self.refused = dict.fromkeys(REASONS, 0)
        self.commits: dict[str, str] = {}
        """Each host's commitment to its coins (:class:`~privbandits.deploy.p2b.messages.HostCommit`); empty: not
        checked (served devices, which have no host session)."""

    @classmethod
    def of(cls, deployment: Deployment[P2BProtocol], *, served: bool = False) -> Admission:
        return cls(admitted_devices(deployment, served=served))

    def check(self, host: str, sender: str, commit: str | None = None) -> str | None:
        """Why the report of ``sender`` on a connection of ``host``'s certificate, carrying ``commit``, is refused
        (counted and logged), or None: ``sender`` is a device the deployment gives ``host``, under the commitment
        ``host`` made (when :attr:`commits` holds it)."""
        if self.devices.get(sender) == host:
            if commit is None or host not in self.commits or commit == self.commits[host]:
                return None
            return self.refuse("commitment", f"a device of {host!r} reported under another commitment to its coins "
                                             f"than {host!r} made (restarted without its state?)")  # fmt: skip
        match = _NUMBER.search(sender)
        owner = self.owner.get(int(match.group(1))) if match else None
        if owner is not None and owner != host:
            return self.refuse("foreign", f"{host!r} sent a report as {sender!r}, a user of {owner!r}'s block")
        return self.refuse("invented", f"{host!r} sent a report as {sender!r}, no device the deployment gives it")

    def refuse(self, reason: str, detail: str) -> str:
        """Count a refusal of ``reason`` (one of :data:`REASONS`) and log it; the one line that says why."""
        self.refused[reason] += 1
        line = f"refused ({reason}): {detail}"
        log.warning("%s", line)
        return line
