"""What a policy kind is to the experiments: the base of every kind's config model, and the policies' type.

A kind's config (:class:`PolicyKindConfig`, registered in :data:`~privbandits.experiments.registry.POLICY_KINDS`)
declares its options as fields and answers the experiment config and the runner through the hooks below: the
runner builds a stream or user kind's learner with :meth:`~PolicyKindConfig.learner` and runs a population kind
with :meth:`~PolicyKindConfig.population_metrics`; the experiment config refuses an environment the kind cannot
serve (``needs``, ``per_arm_only``, :meth:`~PolicyKindConfig.environment_problem`) and adds
:meth:`~PolicyKindConfig.noise_key` to each run's store key. :data:`PolicyConfig` is a policy of the experiment
config: validated through the registry, dumped as its own kind.

``LATER`` fields were added after runs were stored: at their defaults they are left out of the run spec, so
those runs keep their keys.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import Field, PlainValidator, SerializeAsAny, model_serializer

from privbandits.experiments.config.base import _Strict
from privbandits.experiments.registry import POLICY_KINDS

if TYPE_CHECKING:
    import numpy as np

    from privbandits.experiments.adapters import Learner
    from privbandits.experiments.sources import EnvironmentSource, ReplaySource

Needs = Literal["stream", "users", "population"]


class PolicyKindConfig(_Strict):
    """The config of one policy kind (a subclass per kind, with its ``kind: Literal["NAME"]`` tag)."""

    if TYPE_CHECKING:  # each subclass's tag field (declared here for the checker only: it is no field of the base)
        kind: str
    label: str | None = Field(None, min_length=1, max_length=80)
    needs: ClassVar[Needs] = "stream"
    """What the policy plays on: 'stream' (contexts), 'users' (user + items) or 'population'."""
    per_arm_only: ClassVar[bool] = False
    """Whether it needs one context per arm (refused on environments with one context per round)."""
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

    def learner(self, source: EnvironmentSource | ReplaySource, horizon: int, seed: np.random.SeedSequence) -> Learner:
        """The learner of one run of ``horizon`` rounds on ``source``, behind the runner's contract
        (:mod:`~privbandits.experiments.adapters`); ``seed`` is the run's policy stream. A stream or user kind
        overrides it."""
        raise TypeError(f"kind {self.kind!r} plays on a population, not on rounds")

    def population_metrics(self, environment: Any, horizon: int, seed: int) -> dict[str, float]:
        """The metrics of one run on a population environment (``horizon`` interactions per user, the run's
        ``seed``). A population kind overrides it."""
        raise TypeError(f"a population environment runs a population kind only, got {self.kind!r}")

    def environment_problem(self, env: Any) -> str | None:
        """Why this policy cannot run on ``env`` beyond what ``needs`` and ``per_arm_only`` say (one phrase;
        ``"FIELD: why"`` when one of its fields is the cause), or None."""
        return None

    def noise_key(self) -> dict[str, str]:
        """What its run specs add to the store key: the DP noise sampler where its runs draw DP noise (a changed
        sampler changes their numbers, and nothing else's), else nothing."""
        return {}


PolicyConfig = Annotated[PolicyKindConfig, PlainValidator(POLICY_KINDS.validate), SerializeAsAny()]
"""A policy of the experiment config: validated by the model its ``kind`` names in the registry (pydantic's
tagged-union errors), dumped with its own kind's fields."""
