"""Serve live decisions: a party as a long-running service its application asks over HTTP.

The protocol-independent core of ``privbandits serve`` (docs/serve.md): the :class:`~privbandits.serve.decider.Decider`
interface a protocol's serving role implements, the event store (:mod:`~privbandits.serve.store`), the service that
joins them with idempotency, reward timeouts and exact recovery (:mod:`~privbandits.serve.service`), the HTTP API
(:mod:`~privbandits.serve.app`, its schema in :mod:`~privbandits.serve.schema`), client tokens
(:mod:`~privbandits.serve.auth`), metrics, the server and a typed client (:mod:`~privbandits.serve.client`). The
reference decider (:mod:`~privbandits.serve.reference`) serves a plaintext learner: the template protocols follow.
Submodules are imported where used, so importing this package is cheap.
"""
