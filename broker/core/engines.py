"""The Engine seam: what gives a room's publishes their order.

Centrifuge's ``broker.go`` declares this seam as its Broker, with
``broker_memory.go`` beside ``broker_redis.go``; Centrifugo called the pair its
memory and Redis engines. Here a broker is a process, so the seam is an
Engine: the part that takes a request to publish in a room and answers where
it went. Two stand side by side, each an :class:`Engine`:
:class:`broker.core.memory_engine.MemoryEngine` for a broker alone,
:class:`broker.cluster.redis_engine.RedisEngine` for brokers sharing a room
through Redis. Rules this module keeps:

* A publish is :meth:`Engine.publish`: a room (today's one
  :class:`broker.core.hub.Hub`, always passed in, never held) and a
  :class:`PublishRequest`, answered with a :class:`PublishResult`. Whoever
  asks never learns which Engine answered.
* A request is a message with, maybe, its conflating key, or a counter's
  change (:class:`CounterChange`); either with, maybe, an idempotency key and
  the fingerprint of the request it came with (:class:`Once`).
* A retry of an idempotency key gets the first answer again, ``replayed``; the
  key with another request raises :class:`broker.core.idempotency.KeyReused`.
  A message with no JSON text raises ValueError
  (:class:`broker.protocol.frames.MessageTooBig` for one over the room's
  bound), so does a counter's change past its bounds; an Engine that cannot
  take a request now raises :class:`broker.core.seams.RelayUnavailable`.
  What raised published nothing.
* Nothing here does I/O.
"""

from typing import NamedTuple, Optional, Protocol

from broker.core.counters import Amount
from broker.core.idempotency import Answer


class Once(NamedTuple):
    """A request's idempotency key and the fingerprint of the request it came with
    (:func:`broker.core.idempotency.fingerprint`)."""

    key: str
    fingerprint: str


class CounterChange(NamedTuple):
    """A change of the counter ``name``: its ``operation`` (``add``, ``max``) with the ``amount``
    (see :mod:`broker.core.counters`)."""

    name: str
    operation: str
    amount: Amount


class PublishRequest(NamedTuple):
    """What to publish: a ``message`` (a JSON value) of the conflating key ``conflating`` (or None),
    or, instead, a ``counter`` change; ``once``: its idempotency key, if any."""

    message: object = None
    conflating: Optional[str] = None
    counter: Optional[CounterChange] = None
    once: Optional[Once] = None


class PublishResult(NamedTuple):
    """Where a publish went: how many subscribers of this broker it reaches (``recipients``),
    its position (``epoch``, ``offset``), a counter's total after it (``value``), and whether
    it is the first answer again, to a retry (``replayed``)."""

    recipients: int
    epoch: str
    offset: str
    value: Optional[str] = None
    replayed: bool = False

    @classmethod
    def of(cls, answer, replayed=False):
        """The result an :class:`broker.core.idempotency.Answer` kept states."""
        return cls(answer.recipients, answer.epoch, answer.offset, answer.value, replayed)

    def body(self):
        """The JSON object ``POST /publish`` answers with."""
        body = {"recipients": self.recipients, "position": {"epoch": self.epoch, "offset": self.offset}}
        if self.value is not None:
            body["value"] = self.value
        return body


class Engine(Protocol):
    """What publishes in a room (see the module's rules)."""

    async def publish(self, room, request: PublishRequest) -> PublishResult:
        """Publish ``request`` in ``room`` (a :class:`broker.core.hub.Hub`)."""


def first_answer(room, request, offset=None, value=None):
    """The :class:`Answer` to ``request`` in ``room`` as an Engine keeps it for its retries."""
    return Answer(None if request.once is None else request.once.fingerprint, len(room), room.epoch, offset, value)
