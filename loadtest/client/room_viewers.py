"""The ``rooms`` command's viewers: each joins its rooms, times every message of them and counts any other.

Rules (docs/load-testing.rst, "Many rooms: ``rooms``"):

- Room ``i`` is named ``room-<i>`` (:func:`room_name`); its messages are ``"<i>:<seq>:<t_us>"``
  (:func:`loadtest.framing.payload.message` with the room's index as sender), published at
  ``t_us``. A viewer's URL names its rooms (:func:`viewer_url`): ``?rooms=room-3`` for one,
  ``?rooms=room-3,room-7`` for a session of several, whose messages come as ``{"r":...,"d":...}``.
- A :class:`RoomViewer` reads each SockJS array frame its connection receives (the protocol's
  ``count_messages``: every SockJS transport; the raw websocket is not one): a message of a room
  it joined is counted and its lateness recorded, in the hot room's histogram or the tail's; a
  message of any other room, or one saying another room than its text's, is ``foreign``.
- A :class:`RoomViewers` group is the viewers of a :class:`loadtest.client.connections.GroupSpec`
  whose ``urls`` hold one URL per viewer, client ``i`` to ``urls[i]``; it may run in a worker.
  Every wait is bounded.
- Given tokens (private rooms), viewer ``i`` sends ``{"token":"<tokens[i]>"}`` as its first
  message, as the SockJS open frame is read, on every SockJS transport; it sends nothing else. A
  viewer is joined once the broker has read it: the broker says nothing, its ``/stats`` tells."""

import asyncio
import collections
import dataclasses
import json
import urllib.parse

from hdrh.histogram import HdrHistogram

from loadtest.client import tls_context
from loadtest.client.connections import CONNECTING_AT_ONCE, ClientGroup
from loadtest.client.deliveries import failure_reason, now_us
from loadtest.errors import ConnectError
from loadtest.framing import endpoints, payload
from loadtest.method import rules
from loadtest.method.skew import HOT

CONNECT_TIMEOUT_S = 10.0
ROOM_PREFIX = "room-"
QUERY_ROOMS = "rooms"
_decode = json.JSONDecoder().decode


def room_name(index):
    """The name of room ``index``: ``room-<index>``."""
    return "%s%d" % (ROOM_PREFIX, index)


def viewer_url(url, rooms):
    """The SockJS URL ``url`` of a viewer that joins the rooms of the indexes ``rooms``."""
    return endpoints.with_query(url, QUERY_ROOMS + "=" + ",".join(room_name(room) for room in rooms))


def rooms_of(url):
    """The room indexes a viewer's URL (:func:`viewer_url`) joins, in its order."""
    query = urllib.parse.parse_qs(endpoints.target(url).query)
    return tuple(int(name[len(ROOM_PREFIX):]) for name in query[QUERY_ROOMS][0].split(","))


class RoomViewer:
    """One viewer of ``rooms`` (indexes): ``received``, the messages of its rooms; ``foreign``, the others';
    ``hot`` and ``tail``: the histograms of the hot room's deliveries and the rest's (microseconds)."""

    def __init__(self, rooms, hot, tail):
        self.rooms = frozenset(rooms)
        self.hot = hot
        self.tail = tail
        self.received = 0
        self.foreign = 0

    def count_frame(self, buffer, start, end):
        """The messages of its rooms in the SockJS array frame ``buffer[start:end]``, each timed."""
        counted = 0
        now = now_us()
        for item in _decode(buffer[start + 1:end].decode()):
            named = None
            if isinstance(item, dict):
                named, item = item.get("r"), item.get("d")
            room, sent_us = _room_and_time(item)
            if room is None:
                continue
            if room not in self.rooms or (named is not None and named != room_name(room)):
                self.foreign += 1
                continue
            counted += 1
            (self.hot if room == HOT else self.tail).record_value(max(1, now - sent_us))
        self.received += counted
        return counted


def _room_and_time(text):
    """``(room index, sent_us)`` of a room message's text, or ``(None, None)`` for anything else."""
    try:
        room, _, sent_us = text.split(":")
        return int(room), int(sent_us)
    except (AttributeError, ValueError):
        return None, None


@dataclasses.dataclass(frozen=True)
class ViewersReport:
    """What a group's viewers had: ``viewers``, ``connected`` (alive now), ``received``, ``foreign``,
    ``short`` and ``extra`` (against each viewer's rooms' publishes), ``dropped`` by reason, and
    the encoded ``hot`` and ``tail`` histograms."""

    viewers: int
    connected: int
    received: int
    foreign: int
    short: int
    extra: int
    dropped: dict
    hot: bytes
    tail: bytes


class RoomViewers:
    """The viewers of a :class:`loadtest.client.connections.GroupSpec`, one URL each (module rules)."""

    COMMANDS = ("connect", "missing", "report")

    def __init__(self, spec):
        self.spec = spec
        self._clients = ClientGroup(dataclasses.replace(spec, listen=True))
        self.hot = rules.new_histogram()
        self.tail = rules.new_histogram()
        ids = range(spec.first_id, spec.first_id + spec.count)
        self.urls = [spec.urls[client_id] for client_id in ids]
        self.viewers = [RoomViewer(rooms_of(url), self.hot, self.tail) for url in self.urls]
        self.connections = [None] * spec.count

    async def connect(self, tokens=None):
        """Open every viewer's connection, ``CONNECTING_AT_ONCE`` at a time: ``{reason: count}`` of the failures.
        ``tokens``: one JWT per client id of the spec's whole (not this group's share), or None (public rooms)."""
        gate = asyncio.Semaphore(CONNECTING_AT_ONCE)
        failures = collections.Counter()

        async def one(index):
            async with gate:
                reason = await self._open(index, None if tokens is None else tokens[self.spec.first_id + index])
                if reason is not None:
                    failures[reason] += 1

        await asyncio.gather(*(one(i) for i in range(len(self.viewers))))
        return dict(failures)

    async def _open(self, index, token):
        """Open viewer ``index``, handing the broker ``token`` first if not None: None, or why it failed."""
        client_id = self.spec.first_id + index
        url = self.urls[index]
        service = endpoints.target(url)
        connection = self._clients.new_connection(client_id, url)
        connection.protocol.count_messages = self.viewers[index].count_frame
        connection.protocol.marker = None  # the viewer times what it counts
        if token is not None:
            connection.protocol.first_message = payload.token_message(token)
        try:
            await connection.open(service.host, service.port, self.spec.source_address(client_id),
                                  CONNECT_TIMEOUT_S, tls_context.context_for(service))
        except (OSError, asyncio.TimeoutError, ConnectError) as exc:
            connection.close()
            return failure_reason(exc)
        self.connections[index] = connection
        return None

    async def missing(self, published):
        """Messages the viewers still alive lack, ``published`` holding each room's publishes."""
        return sum(max(0, _expected(viewer, published) - viewer.received)
                   for viewer, connection in zip(self.viewers, self.connections)
                   if connection is not None and connection.alive)

    async def report(self, published):
        """The :class:`ViewersReport`, ``published`` holding each room's publishes."""
        alive = [connection is not None and connection.alive for connection in self.connections]
        dropped = collections.Counter(connection.closed_reason for connection in self.connections
                                      if connection is not None and not connection.alive)
        return ViewersReport(
            viewers=len(self.viewers), connected=sum(alive), received=sum(v.received for v in self.viewers),
            foreign=sum(v.foreign for v in self.viewers),
            short=sum(max(0, _expected(v, published) - v.received) for v, up in zip(self.viewers, alive) if up),
            extra=sum(max(0, v.received - _expected(v, published)) for v in self.viewers), dropped=dict(dropped),
            hot=self.hot.encode(), tail=self.tail.encode())

    def close(self):
        for connection in self.connections:
            if connection is not None:
                connection.close()
        self._clients.close()


def _expected(viewer, published):
    return sum(published[room] for room in viewer.rooms)


def merged(reports):
    """One :class:`ViewersReport` of several groups', its histograms decoded: ``(report, hot, tail)``."""
    hot, tail = rules.new_histogram(), rules.new_histogram()
    dropped = collections.Counter()
    for report in reports:
        hot.add(HdrHistogram.decode(report.hot))
        tail.add(HdrHistogram.decode(report.tail))
        dropped.update(report.dropped)
    total = {field: sum(getattr(report, field) for report in reports)
             for field in ("viewers", "connected", "received", "foreign", "short", "extra")}
    return ViewersReport(dropped=dict(dropped), hot=b"", tail=b"", **total), hot, tail
