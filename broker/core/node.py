"""The running broker's parts, and the rules every client is held to.

Rules this module keeps:

* One :class:`Node` per running broker. :func:`broker.app.run` builds it; the
  SockJS router, its sessions and the operators' handlers receive it, instead
  of each part passed down on its own.
* A part the broker runs without is None (no backplane without ``--redis``,
  no ping wheel without ``--ws-ping-interval``). A running broker always has
  its room, limits and drain; a router a test builds may go without them.
* :class:`ClientRules` are plain values, fixed at startup; the defaults are
  the broker's flags' defaults but ``client_rate``, which is 0 (no limit):
  a router built in a test or for the SockJS conformance suite does not
  limit its clients unless told to.
* Every part has a type: a part of a layer above the core (the cluster
  backplane, the garbage-collector policy, the count of failed TLS
  handshakes) is the :class:`typing.Protocol` of what the node's users ask of
  it. Every part that reports states its figures (:mod:`broker.core.figures`).
* Nothing here does I/O or imports a layer above the core.
"""

import dataclasses
from typing import Optional, Protocol, Tuple

from broker.core.audience import Audience
from broker.core.engines import Engine
from broker.core.connection_age import AgeLimit
from broker.core.drain import Drain
from broker.core.figures import Reporting
from broker.core.heartbeats import HeartbeatWheel, PingWheel
from broker.core.hub import Hub
from broker.core.idempotency import Window
from broker.core.limits import Limits
from broker.core.liveness import Liveness
from broker.core.origins import OriginPolicy
from broker.core.rooms import Rooms
from broker.core.session_tokens import SessionTokens
from broker.protocol.tokens import Verifier


@dataclasses.dataclass(frozen=True)
class ClientRules:
    """What one client may do: ``max_message_size`` bounds one send request
    or websocket message; ``max_buffer`` bounds the unsent bytes of one
    connection, and a websocket that took none of its pending bytes for
    ``write_timeout`` seconds is dropped as a slow consumer too; ``origins``
    says which pages may use the service; ``client_rate`` is how many
    messages a second one client may publish (0: no limit), in bursts of up
    to twice as many; ``max_session_rooms`` is how many rooms one session may
    join (:mod:`broker.protocol.room_names`); ``private_rooms``, the patterns of
    the named rooms a session joins only with a token naming them
    (``--private-rooms``, :mod:`broker.protocol.tokens`)."""

    max_message_size: int = 64 * 1024
    max_buffer: int = 1024 * 1024
    write_timeout: float = 30.0
    origins: OriginPolicy = dataclasses.field(default_factory=OriginPolicy)
    client_rate: float = 0
    max_session_rooms: int = 16
    private_rooms: Tuple[str, ...] = ()


class LinkState(Protocol):
    """Whether the backplane is up, and if not, why (:class:`broker.cluster.state.BackplaneState`)."""

    is_up: bool
    reason: Optional[str]


class ClusterLink(Reporting, Protocol):
    """The cluster backplane as the node's users see it (:class:`broker.cluster.backplane.Backplane`):
    its state, and the room's count and the brokers reporting it (None until Redis gave them).
    Publishing through it is the :attr:`Node.engine`'s business."""

    state: LinkState
    room_audience: Optional[int]
    room_brokers: Optional[int]


class RoomsLink(Reporting, Protocol):
    """The named rooms of a cluster through Redis (:class:`broker.cluster.rooms_in_redis.RoomsInRedis`):
    started once the backplane is, stopped before it."""

    def start(self) -> None:
        """Read the rooms' feeds from now on."""

    async def stop(self) -> None:
        """Finish the writes in flight, stop the feeds, close the connections."""


class HandshakeCount(Reporting, Protocol):
    """The failed TLS handshakes (:class:`broker.transports.tls.HandshakeFailures`): a filter of
    Tornado's log records, told by the listener of connections lost before their handshake."""

    def lost(self) -> None:
        """A connection was lost before its handshake began."""

    def filter(self, record) -> bool:
        """Whether Tornado's log ``record`` is logged (a failed handshake is counted instead)."""


@dataclasses.dataclass
class Node:
    """One running broker: its default room (``hub``) and every room (``rooms``, a
    :class:`broker.core.rooms.Rooms`), its connection ``limits``, its
    ``drain``; the wheels that ping websockets (``pings``) and send sessions
    their heartbeats (``heartbeats``: without it, sockjs-tornado's timer per
    session); the age limit that sends old connections elsewhere (``ages``);
    the count of who watches (``audience``); what checks tokens (``verifier``, a
    :class:`broker.protocol.tokens.Verifier`: None without ``--token-secret`` or
    ``--token-public-key``), and the sessions' tokens (``tokens``,
    :mod:`broker.core.session_tokens`); what publishes in the room (``engine``: a
    :class:`broker.core.engines.Engine`, in memory or through the backplane's Redis) and the
    idempotency keys of ``POST /publish`` (``idempotency``); whether a message would get through
    now (``liveness``, :mod:`broker.core.liveness`);
    the garbage-collector policy (``collection``, see
    :mod:`broker.ops.gc_policy`), the cluster ``backplane``
    (:class:`broker.cluster.backplane.Backplane`) and its named rooms' (``rooms_in_redis``) and, over TLS, the count of
    failed handshakes (``tls``, :class:`broker.transports.tls.HandshakeFailures`),
    each of which states its figures (:mod:`broker.core.figures`), shown in ``/stats``
    and most in ``/metrics`` (:mod:`broker.ops.catalogue` puts them in order)."""

    hub: Optional[Hub] = None
    rooms: Optional[Rooms] = None
    limits: Optional[Limits] = None
    drain: Optional[Drain] = None
    pings: Optional[PingWheel] = None
    heartbeats: Optional[HeartbeatWheel] = None
    ages: Optional[AgeLimit] = None
    audience: Optional[Audience] = None
    idempotency: Window = dataclasses.field(default_factory=lambda: Window(600.0))
    collection: Optional[Reporting] = None
    backplane: Optional[ClusterLink] = None
    rooms_in_redis: Optional[RoomsLink] = None
    engine: Optional[Engine] = None
    tls: Optional[HandshakeCount] = None
    liveness: Optional[Liveness] = None
    verifier: Optional[Verifier] = None
    tokens: SessionTokens = dataclasses.field(default_factory=SessionTokens)

    @property
    def ping_timeouts(self) -> int:
        """Websockets cut for want of a pong: 0 without a ping wheel."""
        return self.pings.timed_out if self.pings is not None else 0
