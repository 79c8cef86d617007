"""The rooms of a broker: the default room, and the named rooms it holds, each a Hub.

Rules this module keeps:

* The default room (:data:`broker.protocol.room_names.DEFAULT`, no name on the wire) is
  the broker's room of before rooms, always there, never forgotten, not counted
  among the rooms; its subscribers and its flushes are exactly what they were.
* A named room is a :class:`broker.core.hub.Hub` of its own (its history and
  epoch, counters, conflation, resumes), made on first use, a join or a
  publish (:meth:`Rooms.room`), at most ``most`` of them: past that a new one
  is refused (:class:`RoomsFull`), and counted.
* A named room is forgotten when it has had no subscriber and no publish for
  ``idle_seconds`` (its history's age): :meth:`Rooms.sample`, once a second,
  looks at every named room (and ages it, as the default room's own timer ages
  it); nothing is looked at per message. A room forgotten and used again is a
  new room: a new epoch, and a resume in it a ``gap``.
* A ``listener`` (in a cluster, :class:`broker.cluster.rooms_in_redis.RoomsInRedis`) is told when a
  named room gains its first local viewer (:meth:`Rooms.joined`, before that viewer is
  subscribed, so that its start waits for the room's history) and when it is forgotten: a
  broker reads a room only while it holds a viewer of it, or held one within ``idle_seconds``.
* The figures of ``/stats`` and ``/metrics`` are the default room's names,
  totalled over every room where a total means something (messages, flushes,
  connections, disconnects, history kept, starts), the default room's alone
  where it does not (its epoch, newest offset, latency, uptime); plus the
  count of rooms, made, forgotten and refused, and of the messages dropped
  because a session of several rooms sent them. Never a label per room.
* A named room's audience is its subscribers (:mod:`broker.core.audience`), or with a
  ``listener``, its count at every broker (``listener.audience(name)``, None while unknown),
  announced in it as the default room's is in the default room (:meth:`Rooms.announce`).
* The named rooms' histories hold at most ``most_history_bytes`` together (their JSON
  texts, :attr:`broker.core.history.History.bytes`; None: no bound), the default room's
  not counted (its own ``--history`` bounds it, as before rooms). :meth:`Rooms.sample`
  adds them up as it looks at every room; only when they are over it, it sorts the rooms
  by their histories' bytes (O(rooms log rooms), once a second at most) and the largest
  forget their oldest messages (:meth:`broker.core.history.History.shrink`) down to one
  level, the highest that brings the total under the bound (the least forgotten): a resume
  past what they forgot is a gap. Between two sweeps the total may pass the bound by what a second of
  publishing adds. What they forgot is counted, and logged once a sweep at most.
* Nothing here does I/O but that warning; the caller gives the clock.
"""

import dataclasses
import functools
import logging
import time

from broker.core import figures
from broker.core.audience import Audience
from broker.core.figures import COUNTER, GAUGE, HISTOGRAM, Figure, Metric
from broker.core.hub import Hub

LOG = logging.getLogger("broker.core.rooms")

# Figures of the default room that are its own, not a total over the rooms.
OWN = ("history.epoch", "history.newest", "uptime_s")


class RoomRefused(Exception):
    """A room the broker does not open, and why (the exception's text)."""


class RoomsFull(RoomRefused):
    """A new room past the broker's bound (``--max-rooms``)."""


def total(values):
    """The total of one figure over the rooms: numbers added (a rate's to one decimal, as each
    is), mappings added key by key, in the first's order while every room has the same keys."""
    if not isinstance(values[0], dict):
        added = sum(values)
        return round(added, 1) if isinstance(added, float) else added
    merged = {}
    for value in values:
        for key, number in value.items():
            merged[key] = merged.get(key, 0) + number
    same = all(list(value) == list(merged) for value in values)
    return merged if same else dict(sorted(merged.items()))


def _over_rooms(figure):
    """``figure``, a room's, as the broker's: the default room's own, or a :func:`total`."""
    if figure.key in OWN or figure.metric is not None and figure.metric.kind == HISTOGRAM:
        return dataclasses.replace(figure, read=lambda rooms, figure=figure: figure.value(rooms.default))
    return dataclasses.replace(figure, read=lambda rooms, figure=figure: total([figure.value(hub) for hub in rooms]))


class Rooms:
    """The default room ``default`` (a :class:`broker.core.hub.Hub`) and the named rooms
    ``make(name)`` makes (a Hub), at most ``most`` of them, each
    forgotten once empty and idle ``idle_seconds``, ``listener`` told of the named rooms
    joined and forgotten, their histories' bytes together at most ``most_history_bytes``
    once sampled (see the module's rules)."""

    most_history_bytes = None

    def __init__(self, default: Hub, make, most, idle_seconds, clock=time.monotonic, listener=None):
        self.default = default
        self._make = make
        self.most = most
        self.idle_seconds = idle_seconds
        self._clock = clock
        self.listener = listener
        self._named = {}
        self._quiet = {}
        self._audiences = {}
        self.created = 0
        self.forgotten = 0
        self.refused = 0
        self.multiplexed_dropped = 0
        self.history_trimmed = 0
        self.history_trimmed_bytes = 0

    def __len__(self):
        """The named rooms held (the default room is not counted)."""
        return len(self._named)

    def __iter__(self):
        """Every room, the default room first."""
        yield self.default
        yield from list(self._named.values())

    def get(self, name):
        """The room ``name`` (``""``: the default room), or None if the broker holds none."""
        return self._named.get(name) if name else self.default

    def room(self, name):
        """The room ``name``, made if the broker holds none; :class:`RoomsFull` past the bound,
        counted (:class:`RoomRefused` when the bound is 0: no named room, ever)."""
        if not name:
            return self.default
        hub = self._named.get(name)
        if hub is not None:
            return hub
        self._check_room_for(1)
        hub = self._make(name)
        hub.name = name
        self._named[name] = hub
        self.created += 1
        return hub

    def joined(self, names):
        """The rooms ``names`` for a viewer about to join them, each :meth:`room`: all of them,
        or, past the bound, none made (a refusal of :meth:`room`'s); each named room's
        ``listener`` told when it has no viewer yet."""
        self._check_room_for(len({name for name in names if name and name not in self._named}))
        hubs = [self.room(name) for name in names]
        if self.listener is not None:
            for name, hub in zip(names, hubs):
                if name and not len(hub):
                    self.listener.room_joined(name, hub)
        return hubs

    def _check_room_for(self, new):
        """Refuse, counted, ``new`` rooms more past the bound (see :meth:`room`)."""
        if new and len(self._named) + new > self.most:
            self.refused += 1
            if not self.most:
                raise RoomRefused("this broker serves the default room only (--max-rooms 0)")
            raise RoomsFull("the broker holds %d rooms (--max-rooms)" % self.most)

    def sample(self):
        """Age every named room (:meth:`broker.core.hub.Hub.sample`), forget those empty
        and idle ``idle_seconds``, and bring their histories under ``most_history_bytes``;
        call once a second."""
        now = self._clock()
        quiet = self._quiet
        held = 0
        for name, hub in list(self._named.items()):
            hub.sample()
            held += hub.history.bytes
            if len(hub):
                quiet.pop(name, None)
                continue
            seen = quiet.get(name)
            if seen is None or seen[0] != hub.messages_in:
                quiet[name] = (hub.messages_in, now)
            elif now - seen[1] >= self.idle_seconds:
                del self._named[name], quiet[name]
                held -= hub.history.bytes
                self._audiences.pop(name, None)
                self.forgotten += 1
                if self.listener is not None:
                    self.listener.room_forgotten(name)
        if self.most_history_bytes is not None and held > self.most_history_bytes:
            self._trim_histories(held)

    def _trim_histories(self, held):
        """Make the largest named rooms' histories, which hold ``held`` bytes together, forget
        their oldest messages down to one level: the highest that brings them under the bound."""
        histories = sorted((hub.history for hub in self._named.values()), key=lambda history: history.bytes,
                           reverse=True)
        most, rest = self.most_history_bytes, held
        for largest, history in enumerate(histories, 1):
            rest -= history.bytes
            below = histories[largest].bytes if largest < len(histories) else 0
            if rest + largest * below <= most:
                break
        level = (most - rest) // largest
        messages = sum(history.shrink(level) for history in histories[:largest])
        trimmed = held - rest - sum(history.bytes for history in histories[:largest])
        self.history_trimmed += messages
        self.history_trimmed_bytes += trimmed
        LOG.warning("the named rooms' histories held %d bytes, over --max-rooms-history: the largest %d forgot "
                    "their oldest %d messages, %d bytes", held, largest, messages, trimmed)

    def announce(self, every):
        """Send each named room the announcement still waiting for a batch, then make its
        next, if due, its audience announced at most once ``every`` seconds (0: never, and
        nothing to do); call once a second."""
        if not every:
            return
        now = self._clock()
        for name, hub in list(self._named.items()):
            hub.send_announcement()
            audience = self._audiences.get(name)
            if audience is None:
                room = None if self.listener is None else functools.partial(self.listener.audience, name)
                audience = self._audiences[name] = Audience(hub.__len__, room, every)
            announcement = audience.announcement(now)
            if announcement is not None:
                hub.announcement.announce(announcement)

    def connections(self):
        """Every room's subscribers, each once: a session of several rooms (whose subscribers
        each stand for it as their ``connection``) once."""
        return list(dict.fromkeys(getattr(subscriber, "connection", subscriber)
                                  for hub in self for subscriber in hub))

    def history_bytes(self):
        """The bytes the named rooms' histories hold together."""
        return sum(hub.history.bytes for hub in self._named.values())

    def stats(self):
        return figures.stats_of(self)

    FIGURES = tuple(_over_rooms(figure) for figure in Hub.FIGURES) + (
        Figure("rooms", len, Metric("rooms", GAUGE, "Named rooms held (--max-rooms); the default room is not "
                                    "counted")),
        Figure("rooms_created", "created", Metric("rooms_created", COUNTER, "Named rooms made, by a join or a "
                                                  "publish")),
        Figure("rooms_forgotten", "forgotten", Metric("rooms_forgotten", COUNTER, "Named rooms forgotten, "
                                                      "empty and idle past their history's age")),
        Figure("rooms_refused", "refused", Metric("rooms_refused", COUNTER, "Joins and publishes refused a new "
                                                  "room: past --max-rooms")),
        Figure("multiplexed_sends_dropped", "multiplexed_dropped",
               Metric("multiplexed_sends_dropped", COUNTER, "Messages a session of several rooms sent, dropped: "
                      "such a session only listens")),
        Figure("rooms_history_bytes", history_bytes, Metric("rooms_history_bytes", GAUGE, "Bytes of JSON text the "
                                                            "named rooms' histories hold together "
                                                            "(--max-rooms-history)")),
        Figure("rooms_history_trimmed", "history_trimmed",
               Metric("rooms_history_trimmed", COUNTER, "Messages the largest named rooms' histories forgot to "
                      "hold no more than --max-rooms-history together")),
        Figure("rooms_history_trimmed_bytes", "history_trimmed_bytes",
               Metric("rooms_history_trimmed_bytes", COUNTER, "Bytes of JSON text the largest named rooms' "
                      "histories forgot to hold no more than --max-rooms-history together")),
    )
