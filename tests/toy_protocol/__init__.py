"""A toy deployable protocol that lives in the test suite only: it proves a protocol plugs into the deployment
layer (file parser, party runner, ``deploy`` CLI) through :data:`privbandits.deploy.registry.PROTOCOLS`, with no
edit to ``src/``.

Two roles: the ``asker`` sends each round's numbers (drawn from the file's ``seed``) to the ``answerer``, which
sends back their sum; the asker checks every sum. :data:`TOY` is its party code; a test registers it with
``PROTOCOLS.extended(TOY)`` for as long as it needs it.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from privbandits.comm import ROUND, InMemoryNetwork, Message, Network, Party, ProtocolError, message
from privbandits.deploy.deployment_parts import PartyEntry, ProtocolSection, _roles
from privbandits.deploy.registry import DeployableProtocol

NAME = "toy-sum"


EXAMPLE = """
name = "toy"
bundles = "certs"
deadline_s = 10
connect_deadline_s = 10

[protocol]
name = "toy-sum"
rounds = 5
seed = 7

[parties.asker]
role = "asker"
address = "127.0.0.1:0"

[parties.answerer]
role = "answerer"
address = "127.0.0.1:0"
"""
"""A toy-sum deployment: five rounds between two parties on ephemeral ports (the contract suites' valid file)."""


class ToySection(ProtocolSection):
    """The ``[protocol]`` section of a toy-sum deployment."""

    name: Literal["toy-sum"]
    rounds: int = Field(ge=1, le=20, description="questions the asker sends")
    width: int = Field(3, ge=1, le=8, description="numbers per question")
    seed: int = Field(0, ge=0)

    ROLES = ("asker", "answerer")
    REPORTER = "asker"

    def check_parties(self, parties: dict[str, PartyEntry]) -> None:
        _roles(parties, self.ROLES, self.ROLES)


@message("tests.toy.question")
class Question(Message):
    round: int
    values: np.ndarray


@message("tests.toy.answer")
class Answer(Message):
    round: int
    total: int


def questions(section: ToySection) -> np.ndarray:
    """Every round's numbers, from the seed (what both runs, deployed and in memory, ask)."""
    return np.random.default_rng(section.seed).integers(0, 100, size=(section.rounds, section.width))


class Asker(Party):
    def ask(self, peer: str, t: int, values: np.ndarray) -> None:
        self.send(peer, Question(round=t, values=values))

    def check(self, peer: str, t: int, values: np.ndarray) -> int:
        answer = self.receive(Answer, peer)
        if answer.round != t or answer.total != int(values.sum()):
            raise ProtocolError(f"round {t}: {peer!r} answered {answer.total} for round {answer.round}")
        return answer.total


class Answerer(Party):
    def answer(self, peer: str) -> int:
        question = self.receive(Question, peer)
        self.send(peer, Answer(round=question.round, total=int(question.values.sum())))
        return question.round


def _peer(deployment, role: str) -> str:
    return deployment.names(role)[0]


class ToyProtocol(DeployableProtocol):
    """The toy's party code: only :meth:`run_party`, :meth:`run_in_memory` and :meth:`summary` are its own."""

    section = ToySection
    party_modules = (__name__,)

    def run_party(self, deployment, name, network, *, resume, on_round):
        section, role = deployment.protocol, deployment.parties[name].role
        if role == "answerer":
            party, asker = Answerer(name, network), _peer(deployment, "asker")
            for _ in range(section.rounds):
                with network.phase(ROUND):
                    party.answer(asker)
            return {"party": name, "role": role, "answered": section.rounds}
        asker, answerer, totals = Asker(name, network), _peer(deployment, "answerer"), []
        for t, values in enumerate(questions(section), start=1):
            with network.phase(ROUND):
                asker.ask(answerer, t, values)
                totals.append(asker.check(answerer, t, values))
            if on_round is not None:
                on_round(t, section.rounds)
        return {"party": name, "role": role, "rounds": section.rounds, "totals": totals}

    def run_in_memory(self, deployment, network: Network | None = None):
        """Both parties on one in-memory network, round by round: the totals and the network."""
        network = network if network is not None else InMemoryNetwork()
        asker, answerer = _peer(deployment, "asker"), _peer(deployment, "answerer")
        ask, answer, totals = Asker(asker, network), Answerer(answerer, network), []
        for t, values in enumerate(questions(deployment.protocol), start=1):
            with network.phase(ROUND):
                ask.ask(answerer, t, values)
                answer.answer(asker)
                totals.append(ask.check(answerer, t, values))
        return totals, network

    def summary(self, result: dict) -> str:
        if "totals" in result:
            return f"{len(result['totals'])} sums checked"
        return super().summary(result)


TOY = ToyProtocol()
