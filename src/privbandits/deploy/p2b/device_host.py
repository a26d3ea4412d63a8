"""A P2B device host under ``privbandits serve DEPLOY --as HOST``: its devices over HTTP, one per user id.

For an application that cannot embed :class:`~privbandits.deploy.p2b.agent.DeviceAgent` (another language, a thin
client): the host serves each of its users' devices as a :class:`~privbandits.serve.decider.Decider`.
``POST /v1/decide`` with ``user_id`` the device's number (digits; the device ``HOST-deviceUSER``) and ``features``
one row of d numbers (the user's context) decides on that device's own state; ``POST /v1/reward`` (0 or 1) is
learnt by that device, which makes its report decision after ``protocol.interactions`` rewards, as an embedded one
does. The devices' state is their agents' store (``OUTPUT/HOST.devices.sqlite``); the service's own store journals
the same events, and its replay after a restart is idempotent (a decision asked again, a reward again: the same).

The host then holds its users' contexts and rewards, as ``deploy``'s device hosts hold their users' data: the devices
run at the host, not on the users' phones. What leaves it is what an embedded device sends (at most
``report_budget`` encoded tuples per device, to the shuffler).
"""

from __future__ import annotations

from pathlib import Path

from privbandits.deploy.deployment import Deployment
from privbandits.deploy.p2b.agent import AgentRefused, DeviceAgent
from privbandits.deploy.p2b.section import P2BProtocol
from privbandits.serve.decider import DecidedEvent, DecideInput, Decider, Decision, JsonObject, Refused

MAX_USER = 10**12
"""The largest device number a user id may name."""


class ServedDeviceHost(Decider):
    """The devices of device host ``name``, one per user id (see the module docstring)."""

    kind = "p2b-device-host"

    def __init__(self, deployment: Deployment[P2BProtocol], name: str) -> None:
        self.deployment, self.name = deployment, name
        self.store = Path(deployment.output) / f"{name}.devices.sqlite"
        self.devices: dict[int, DeviceAgent] = {}
        self.decisions = self.rewards = 0

    def identity(self) -> str:
        return f"p2b-device-host:{self.name}:{self.deployment.protocol_digest()}"

    def _device(self, user_id: str) -> DeviceAgent:
        if not (user_id.isascii() and user_id.isdigit()) or int(user_id) > MAX_USER:
            raise Refused("user_id", f"must be the device's number (digits, at most {MAX_USER}), got {user_id!r}")
        user = int(user_id)
        if user not in self.devices:
            self.devices[user] = DeviceAgent(self.deployment, self.name, user, self.store)
        return self.devices[user]

    def decide(self, request: DecideInput) -> Decision:
        dim = self.deployment.protocol.dim
        if request.features.shape != (1, dim):
            raise Refused("features", f"must be one row of {dim} numbers (the user's context), got shape "
                          f"{request.features.shape}")  # fmt: skip
        device = self._device(request.user_id)
        try:
            decision = device.decide(request.features[0], request.arms, request.event_id)
        except AgentRefused as exc:
            raise Refused(exc.field, exc.message) from None
        self.decisions += 1
        return Decision(decision.arm, None, decision.model_version, {"code": decision.code, "round": decision.round})

    def replay_decision(self, event: DecidedEvent) -> None:
        self._device(event.user_id)  # the device's store holds the decision already (committed before the answer)

    def check_reward(self, event: DecidedEvent, reward: float) -> None:
        if reward not in (0.0, 1.0):
            raise Refused("reward", f"must be 0 or 1 (P2B's rewards), got {reward!r}")

    def absorb(self, event: DecidedEvent, reward: float) -> None:
        self._device(event.user_id).reward(event.event_id, int(reward))  # again after a restart: a duplicate
        self.rewards += 1

    def ledger(self) -> JsonObject:
        spent = [device.budget() for device in self.devices.values()]
        return {
            "privacy": "each device's report decisions: ε per decision against the server (crowd-blended)",
            "devices_open": len(self.devices),
            "report_decisions": sum(item["report_decisions"] for item in spent),
            "reports_sent": sum(item["reports_sent"] for item in spent),
            "reports_pending": sum(item["reports_pending"] for item in spent),
            "epsilon_per_report": spent[0]["epsilon_per_report"] if spent else None,
            "max_epsilon_spent_by_a_device": max((item["epsilon_spent"] for item in spent), default=0.0),
        }

    def privacy_spent(self) -> dict[str, float]:
        spent = [device.budget()["epsilon_spent"] for device in self.devices.values()]
        return {"max_device_epsilon": max(spent, default=0.0)}

    def stop(self) -> None:
        for device in self.devices.values():
            device.close()
        self.devices = {}
