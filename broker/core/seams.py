"""The room's seams: what it delivers to (a subscriber, through its writer), and what it relays through.

The room (:class:`broker.core.hub.Hub`) knows no socket and no Redis: it
writes each batch to a :class:`Subscriber` through a :class:`Writer`, and,
when brokers share a room, hands every published message to a
:class:`Relay` (:class:`broker.cluster.backplane.Backplane`), which raises
:class:`RelayUnavailable` when it cannot take one.
"""

from typing import Optional, Protocol


class Writer(Protocol):
    """How the room writes its batches to one subscriber: a websocket's or a
    stream's socket (:class:`broker.transports.owned_socket.OwnedSocket`), or
    a session's queue (:class:`broker.transports.session.BrokerSession`): a
    method a reader follows from :meth:`broker.core.hub.Hub._write_all` to the
    socket, not a callable kept."""

    def write_batch(self, data, key: Optional[str]) -> bool:
        """Take one batch in the subscriber's form (see :mod:`broker.protocol.batch`);
        ``key``: the batch is one message of that conflating key (None: it is not).
        False when over its bound: the room then drops the subscriber."""


class RelayUnavailable(Exception):
    """A relay cannot take a message now; the text says why, and the publisher sees it."""


class Subscriber(Protocol):
    """What the room delivers to: a client's connection, whatever its transport."""

    transport: str
    """A name for the counters (``"websocket"``, ``"xhr_streaming"``...)."""
    form: object
    """The wire form it takes (see :mod:`broker.protocol.batch`), or None for the batch itself."""
    writer: Writer
    """What it takes the room's batches through as it joins (:meth:`broker.core.hub.Hub.move` changes it)."""

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
