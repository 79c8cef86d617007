"""The room's two seams: what it delivers to, and what it relays through.

The room (:class:`broker.core.hub.Hub`) knows no socket and no Redis: it
writes each batch to a :class:`Subscriber` through a :data:`Writer`, and,
when brokers share a room, hands every published message to a
:class:`Relay` (:class:`broker.cluster.backplane.Backplane`), which raises
:class:`RelayUnavailable` when it cannot take one.
"""

from typing import Callable, Optional, Protocol

Writer = Callable[..., bool]
"""How the room writes one batch, in a subscriber's form, to it: ``write(data)``, or
``write(data, key)`` for a batch of one message of a conflating ``key``; False when it is over
its bound (see :meth:`Subscriber.write`)."""


class RelayUnavailable(Exception):
    """A relay cannot take a message now; the text says why, and the publisher sees it."""


class Subscriber(Protocol):
    """What the room delivers to: a client's connection, whatever its transport."""

    transport: str
    """A name for the counters (``"websocket"``, ``"xhr_streaming"``...)."""
    form: object
    """The wire form it takes (see :mod:`broker.protocol.batch`), or None for the batch itself."""

    def write(self, data, key=None) -> bool:
        """Take one batch in its form; False when over its bound (the room then
        drops it). ``key``: the batch is one message of that conflating key."""

    def disconnect(self, code: int, reason: str) -> None:
        """Close the client with ``code`` and ``reason`` (see :mod:`broker.protocol.close_codes`)."""


class Relay(Protocol):
    """What the room hands the messages its clients publish to when brokers share it: the
    cluster backplane (:meth:`broker.cluster.backplane.Backplane.append`). Without a relay the
    room is its own, in this process. (``POST /publish`` publishes through a
    :class:`broker.core.engines.Engine` instead.)"""

    def __call__(self, encoded: str, key: Optional[str] = None) -> None:
        """Take one message's JSON text for every broker's room, or raise
        :class:`RelayUnavailable`; ``key``: its conflating key (see :meth:`broker.core.hub.Hub.publish`)."""
