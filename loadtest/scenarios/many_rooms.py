"""``python -m loadtest rooms``: many rooms on one broker, viewers spread over them with a skew, publishes to random rooms.

Rules (docs/load-testing.rst, "Many rooms: ``rooms``"):

- Each number of ``--rooms`` is one run on a broker started afresh (``--max-rooms`` sized for it and
  the idle rooms), pinned to the server CPU, the load client to the other.
- The RSS is read once it settles (:meth:`~loadtest.client.server_probe.ServerProbe.settled_rss_kb`):
  fresh; with ``--idle-rooms`` empty rooms made, one publish into each (``idle-<i>``); with the
  viewers connected (:mod:`loadtest.client.room_viewers`), spread by ``--skew``
  (:mod:`loadtest.method.skew`), ``--rooms-per-viewer`` rooms each over one session.
- A backend publishes ``rooms x --room-rate`` messages a second through ``POST /publish?room=``,
  each to a room drawn at random (every room alike, seeded: the same rooms every run), up to
  ``PUBLISH_CONNECTIONS`` at once, for ``--duration`` seconds at most, never more than the
  duration's messages; through each broker in turn, or the first only (``--publish-at first``), so
  that the others' CPU is what their viewers' rooms, and the rooms they have no viewer of, cost
  them. The viewers then get ``LOSS_AFTER_S`` at most to have every message.
- Each server process's CPU is read idle for ``IDLE_CPU_S`` with the viewers joined, before the
  first publish (heartbeats, the rooms' once-a-second sweep), so that what a message costs a
  broker is its CPU less that share. The brokers' CPU from the first publish to the end of that
  wait, over the deliveries, is the CPU per delivery. A viewer that gets a message of a room it
  did not join is ``foreign``: a run is clean when there is none, and nothing short, twice or
  dropped.
- The joins: from the first viewer's connect until the brokers' ``/stats`` count every viewer's
  rooms joined (``connections_total``, read every ``JOIN_CHECK_S`` once every viewer is open,
  ``JOIN_TIMEOUT_S`` at most): a broker says nothing to a viewer joining a private room, and a
  probe published into the rooms would miss a viewer whose token is still on its way. The
  brokers' CPU over that time, over the viewers, is the CPU per join.
- ``--private``: each broker is started with a secret made for the command's run (never shown)
  and ``--private-rooms room-*``; each viewer gets a JWT (HS256, PyJWT) minted before the first
  connect, ``sub`` ``viewer-<i>``, ``exp`` an hour ahead, ``rooms`` exactly its rooms' names, and
  sends it as its first message (:mod:`loadtest.client.room_viewers`). The idle rooms stay public."""

import argparse
import asyncio
import dataclasses
import random
import secrets
import time
from typing import Optional, Tuple

import jwt

from loadtest import arguments, records
from loadtest.client import connections, room_viewers, server_probe, tls_context, workers
from loadtest.client.deliveries import now_us
from loadtest.client.publisher import Publisher
from loadtest.client.server_probe import ServerProbe
from loadtest.contenders import placement, registry
from loadtest.framing import endpoints, payload
from loadtest.method import rules, skew
from loadtest.method.rules import End
from loadtest.results import console

PUBLISH_CONNECTIONS = 16
IDLE_CPU_S = 5.0
DRAIN_CHECK_S = 0.25
SEED = 67
IDLE_PREFIX = "idle-"
PUBLISH_AT = ("each", "first")  # through each broker in turn, or the first only
JOIN_CHECK_S = 0.05
# Longer than a broker waits for a session's token (10 s) before it closes the session.
JOIN_TIMEOUT_S = 30.0
PRIVATE_ROOMS = room_viewers.ROOM_PREFIX + "*"
TOKEN_LIFETIME_S = 3600
SECRET_BYTES = 32  # token_urlsafe: 43 characters, more than a broker's 32 at least


def parse_skew(text):
    """``--skew``'s type: a :class:`loadtest.method.skew.Skew`."""
    try:
        return skew.parse(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error))


SUMMARY = "many rooms on one broker: viewers spread with a skew, publishes to random rooms; cost per delivery and per room"
DESCRIPTION = ("Start a broker afresh for each number of rooms, make idle empty rooms and weigh them, connect "
               "viewers spread over the rooms (one hot room and a long tail, or evenly), each in one room or "
               "several over one session, publish to random rooms through POST /publish?room=NAME, and "
               "measure the round trip (the hot room's and the tail's), deliveries a second, the broker's CPU "
               "per delivery, its RSS per room and the connections held; a viewer must never get another "
               "room's message.")
EPILOG = ("Skews: uniform (every room alike), zipf:S (room i weighs 1/(i+1)^S), hot:F (room 0 holds the share F "
          "of the viewers, the others share the rest evenly). Room 0 is the hot room.")


def add_arguments(parser):
    arguments.option(parser, "--rooms", type=arguments.comma_list(arguments.positive_int), default=[100],
                     help="rooms, or several numbers of rooms comma-separated, one run each (default 100)")
    arguments.option(parser, "--viewers", type=arguments.positive_int, default=1000, help="viewers in all")
    arguments.option(parser, "--rooms-per-viewer", type=arguments.positive_int, default=1,
                     help="rooms each viewer joins over its one session (several: a multiplexed session; "
                     "default 1)")
    arguments.option(parser, "--skew", type=parse_skew, default=skew.Skew("uniform"),
                     help="how the viewers spread over the rooms: uniform, zipf:S or hot:F (default uniform)")
    arguments.option(parser, "--room-rate", type=arguments.positive_float, default=1.0,
                     help="messages a second per room on average (rooms x this in all), each published to a "
                     "room drawn at random (default 1)")
    arguments.option(parser, "--duration", type=arguments.positive_float, default=10.0,
                     help="seconds of publishing (default 10)")
    arguments.option(parser, "--idle-rooms", type=arguments.non_negative_int, default=1000,
                     help="empty rooms made first, a publish into each, to weigh an idle room (default 1000; "
                     "0: none)")
    arguments.option(parser, "--publish-at", choices=PUBLISH_AT, default=PUBLISH_AT[0],
                     help="the brokers a cluster's backend publishes through: each in turn, or the first only, "
                     "so that the others' CPU is what rooms cost a broker that is not published to (default each)")
    arguments.option(parser, "--private", action="store_true",
                     help="private rooms: each broker checks tokens (a secret made for this run) and makes every "
                     "room of the run private, each viewer joins with a JWT naming its rooms, sent as its first message; the "
                     "record's joins then cost that")
    arguments.option(parser, "--transport", **arguments.TRANSPORT)
    arguments.add_broker_run_arguments(parser, registry.BROKERS, ["broker-cpython"])


@dataclasses.dataclass(frozen=True)
class ManyRoomsSettings:
    """A rooms run: for each of ``rooms``, ``viewers`` over ``transport`` in ``rooms_per_viewer`` rooms each,
    spread by ``skew``; ``room_rate`` messages a second per room for ``duration`` seconds, after
    ``idle_rooms`` empty rooms were made, published through the brokers of ``publish_at``; ``private``: the
    rooms are private, the brokers' tokens signed by ``token_secret`` (made by :meth:`of`)."""

    rooms: Tuple[int, ...]
    viewers: int
    rooms_per_viewer: int
    skew: skew.Skew
    room_rate: float
    duration: float
    idle_rooms: int
    transport: str
    publish_at: str
    private: bool = False
    token_secret: Optional[str] = dataclasses.field(default=None, repr=False, compare=False)

    @classmethod
    def of(cls, args):
        """The settings of the command's parsed arguments; with ``--private``, a secret of their own."""
        return cls(tuple(args.rooms), args.viewers, args.rooms_per_viewer, args.skew, args.room_rate, args.duration,
                   args.idle_rooms, args.transport, args.publish_at, args.private,
                   secrets.token_urlsafe(SECRET_BYTES) if args.private else None)

    def broker_flags(self, rooms):
        """The broker's flags for a run of ``rooms`` rooms: room for them and the idle ones, and each viewer's;
        the viewers' rooms private if ``private`` (the secret apart: :meth:`ManyRoomsRun.secret_flags`)."""
        sized = ("--max-rooms", str(rooms + self.idle_rooms), "--max-session-rooms", str(self.rooms_per_viewer))
        return sized + (("--private-rooms", PRIVATE_ROOMS) if self.private else ())

    def viewer_tokens(self, spread, now):
        """Each viewer's JWT (HS256 by ``token_secret``) to join its rooms of ``spread``, minted at ``now``
        (seconds since the epoch): ``sub`` ``viewer-<i>``, ``exp`` an hour ahead; None unless ``private``."""
        if not self.private:
            return None
        expires = int(now) + TOKEN_LIFETIME_S
        return tuple(jwt.encode({"sub": "viewer-%d" % i, "exp": expires,
                                 "rooms": [room_viewers.room_name(room) for room in joined]},
                                self.token_secret, algorithm="HS256")
                     for i, joined in enumerate(spread))

    def refusal(self):
        """Why these settings cannot run, or None."""
        if self.transport == endpoints.RAW:
            return "--transport raw: a viewer reads SockJS frames; the plain websocket is not measured here"
        if self.rooms_per_viewer > min(self.rooms):
            return "--rooms-per-viewer %d: more than the %d rooms of a run" % (self.rooms_per_viewer, min(self.rooms))
        return None


class ManyRoomsRun(placement.BrokerRun):
    """One number of rooms against one broker: idle rooms, viewers, publishes, the record."""

    @classmethod
    def variants(cls, settings):
        """One broker for each number of rooms."""
        return [settings.broker_flags(rooms) for rooms in settings.rooms]

    @classmethod
    def secret_flags(cls, settings):
        """The secret that signs the viewers' tokens, if the rooms are private: one argument, for a secret may
        begin with ``-``, which the broker would read as a flag of its own."""
        return ("--token-secret=" + settings.token_secret,) if settings.private else ()

    async def run(self):
        """The :class:`loadtest.records.ManyRooms` of the run, also written to the results file."""
        settings = self.settings
        rooms = next(n for n in settings.rooms if settings.broker_flags(n) == self.flags)
        probe = ServerProbe(self.cluster.pids())
        rss = {"start": await probe.settled_rss_kb()}
        urls = self.cluster.urls[:1] if settings.publish_at == "first" else self.cluster.urls
        publishers = [Publisher(service.host, service.port, self.token, PUBLISH_CONNECTIONS,
                                ssl_context=tls_context.context_for(service))
                      for service in map(endpoints.target, urls)]
        try:
            rss["idle"] = await self._idle_rooms(publishers[0], probe)
            spread = skew.spread(settings.skew, rooms, settings.viewers, settings.rooms_per_viewer)
            return await self._load(RoomsLoad(rooms, spread, probe, publishers, rss))
        finally:
            for publisher in publishers:
                publisher.close()

    async def _idle_rooms(self, publisher, probe):
        """Make ``--idle-rooms`` empty rooms, a publish into each: the RSS once it settles."""
        loop = asyncio.get_event_loop()
        count = self.settings.idle_rooms
        for first in range(0, count, PUBLISH_CONNECTIONS):
            requests = [(b"?room=%s%d" % (IDLE_PREFIX.encode(), i), b"idle")
                        for i in range(first, min(count, first + PUBLISH_CONNECTIONS))]
            await loop.run_in_executor(None, publisher.publish_each, requests)
        if count:
            self.status.message("%s: %d idle rooms made" % (self.label, count))
        return await probe.settled_rss_kb() if count else probe.rss_kb()

    async def _load(self, load):
        """Connect the viewers of ``load``, publish, wait for the last deliveries: the record."""
        settings = self.settings
        urls = tuple(room_viewers.viewer_url(self.cluster.urls[i % len(self.cluster.urls)], joined)
                     for i, joined in enumerate(load.spread))
        spec = connections.GroupSpec(urls, settings.transport, count=settings.viewers)
        procs = self.placement.client_procs(settings.viewers)
        groups = ([room_viewers.RoomViewers(spec)] if procs == 1 else
                  workers.in_workers(room_viewers.RoomViewers, spec, procs, self.placement.client_cpus))
        published = [0] * load.rooms
        tokens = settings.viewer_tokens(load.spread, time.time())
        loop = asyncio.get_event_loop()
        try:
            started, before = loop.time(), load.probe.cpu_seconds_each()
            failures = workers.summed(await asyncio.gather(*(group.connect(tokens) for group in groups)))
            if not failures:
                failures = await self._until_joined(load, started, before)
            load.rss["joined"] = await load.probe.settled_rss_kb()
            if failures:
                return await self._record(load, groups, published, End.CONNECTIONS_FAILED.text(
                    console.listed(failures)))
            self.status.message("%s: %d viewers in %d rooms (%d each, %s) over %s" % (
                self.label, settings.viewers, load.rooms, settings.rooms_per_viewer, settings.skew,
                settings.transport))
            load.idle_cpu = await self._idle_cpu(load.probe)
            started, before = loop.time(), load.probe.cpu_seconds_each()
            load.elapsed = await self._publish(load.publishers, published)
            deadline = loop.time() + rules.LOSS_AFTER_S
            while loop.time() < deadline and sum(await asyncio.gather(*(group.missing(published)
                                                                        for group in groups))):
                await asyncio.sleep(DRAIN_CHECK_S)
            load.cpu = ({name: used - before[name] for name, used in load.probe.cpu_seconds_each().items()},
                        loop.time() - started)
            return await self._record(load, groups, published, End.COMPLETED.text())
        finally:
            for group in groups:
                group.close()

    async def _until_joined(self, load, started, before):
        """Wait until the brokers' ``/stats`` count every viewer's rooms joined, ``JOIN_TIMEOUT_S`` at most; keep
        in ``load.join`` the CPU and the seconds from ``started`` (``before``: the CPU then): the failures."""
        loop = asyncio.get_event_loop()
        expected = sum(map(len, load.spread))
        deadline = loop.time() + JOIN_TIMEOUT_S
        while True:
            documents = await asyncio.gather(*map(server_probe.server_stats, self.cluster.urls))
            joined = sum((document or {}).get("connections_total", 0) for document in documents)
            if joined >= expected or loop.time() >= deadline:
                break
            await asyncio.sleep(JOIN_CHECK_S)
        load.join = ({name: used - before[name] for name, used in load.probe.cpu_seconds_each().items()},
                     loop.time() - started)
        if joined >= expected:
            return {}
        return {"room joins missing after %g s" % JOIN_TIMEOUT_S: expected - joined}

    @staticmethod
    async def _idle_cpu(probe):
        """Each server process's CPU, a share of one core, over ``IDLE_CPU_S`` before anything is published."""
        before = probe.cpu_seconds_each()
        await asyncio.sleep(IDLE_CPU_S)
        return {name: round((used - before[name]) / IDLE_CPU_S, 4) for name, used in probe.cpu_seconds_each().items()}

    async def _publish(self, publishers, published):
        """Publish to random rooms for ``--duration`` seconds, counting each room's in ``published``: the seconds."""
        settings = self.settings
        rooms = len(published)
        rate = rooms * settings.room_rate
        total = max(1, int(round(rate * settings.duration)))
        draw = random.Random(SEED)
        loop = asyncio.get_event_loop()
        sent = 0
        start = loop.time()
        while sent < total and loop.time() < start + settings.duration:
            due = min(total, int((loop.time() - start) * rate) + 1)
            chosen = [draw.randrange(rooms) for _ in range(min(due - sent, PUBLISH_CONNECTIONS))]
            await loop.run_in_executor(None, publish_into, publishers[sent % len(publishers)], chosen, sent)
            for room in chosen:
                published[room] += 1
            sent += len(chosen)
            await asyncio.sleep(max(0.0, start + sent / rate - loop.time()))
        await asyncio.sleep(max(0.0, start + settings.duration - loop.time()))
        return loop.time() - start

    async def _record(self, load, groups, published, end):
        settings = self.settings
        report, hot, tail = room_viewers.merged(await asyncio.gather(*(group.report(published) for group in groups)))
        both = rules.new_histogram()
        both.add(hot)
        both.add(tail)
        rss, elapsed = load.rss, load.elapsed
        rss["end"] = load.probe.rss_kb()
        cpu_s, seconds = load.cpu or ({}, None)
        cpu = rules.ServerFigures.of(sum(cpu_s.values()), seconds, report.received, rss["end"]) if seconds else \
            rules.ServerFigures()
        join_cpu_s, join_s = load.join or (None, None)
        record = records.ManyRooms(
            server=self.label, brokers=len(self.cluster.servers), publish_at=settings.publish_at,
            transport=settings.transport, rooms=load.rooms, viewers=settings.viewers,
            rooms_per_viewer=settings.rooms_per_viewer, skew=str(settings.skew),
            hot_viewers=skew.audiences(load.spread, load.rooms)[skew.HOT], room_rate=settings.room_rate,
            rate=load.rooms * settings.room_rate, duration_s=round(elapsed, 2), published=sum(published),
            received=report.received, deliveries_per_s=round(report.received / elapsed, 1) if elapsed else 0.0,
            foreign=report.foreign, short=report.short, extra=report.extra, dropped=sum(report.dropped.values()),
            drop_reasons=report.dropped, connections=report.connected, rtt_ms=rules.rtt_summary(both),
            hot_rtt_ms=rules.rtt_summary(hot), tail_rtt_ms=rules.rtt_summary(tail),
            cpu_us_per_delivery=cpu.cpu_us_per_msg, server_cpu=cpu.cpu,
            cpu_s={name: round(used, 3) for name, used in cpu_s.items()},
            cpu_window_s=round(seconds, 2) if seconds else None, idle_cpu=load.idle_cpu,
            idle_rooms=settings.idle_rooms, rss_start_kb=rss["start"],
            rss_idle_kb=rss["idle"],
            rss_per_idle_room_kb=round((rss["idle"] - rss["start"]) / settings.idle_rooms, 3)
            if settings.idle_rooms else None,
            rss_joined_kb=rss["joined"], rss_per_joined_room_kb=round((rss["joined"] - rss["idle"]) / load.rooms, 3),
            rss_end_kb=rss["end"], end=end, private=settings.private,
            join_s=round(join_s, 3) if join_s else None,
            joins_per_s=round(settings.viewers / join_s, 1) if join_s else None,
            join_cpu_s={name: round(used, 3) for name, used in join_cpu_s.items()} if join_s else None,
            cpu_us_per_join=round(sum(join_cpu_s.values()) / settings.viewers * 1e6, 1) if join_s else None)
        self.out.write(record)
        return record

    @staticmethod
    def verdict(record):
        """The line a person reads when a run ends."""
        return ("%s, %d %srooms x %d viewers (%d rooms each, %s; the hot room %d) over %s: %s joins/s, %s us of "
                "CPU per join; %d published, %s deliveries/s, p50/p99 %s/%s ms (hot %s, tail %s), %s us of CPU per "
                "delivery, %s KiB per idle room, %d connections; %d foreign, %d short, %d twice, %d dropped; %s" % (
                    record.server, record.rooms, "private " if record.private else "", record.viewers,
                    record.rooms_per_viewer, record.skew, record.hot_viewers, record.transport, record.joins_per_s,
                    record.cpu_us_per_join, record.published, "{:,.0f}".format(record.deliveries_per_s),
                    record.rtt_ms["p50"], record.rtt_ms["p99"], record.hot_rtt_ms["p99"], record.tail_rtt_ms["p99"],
                    record.cpu_us_per_delivery, record.rss_per_idle_room_kb, record.connections, record.foreign,
                    record.short, record.extra, record.dropped, record.end))

    @staticmethod
    def clean(record):
        """Whether every viewer had its rooms' messages, once, and no other room's."""
        return record.end == End.COMPLETED.text() and not (
            record.foreign or record.short or record.extra or record.dropped)


@dataclasses.dataclass
class RoomsLoad:
    """One run's state: its number of ``rooms``, each viewer's rooms (``spread``), the brokers' ``probe``,
    the ``publishers``, the RSS at each stage (``rss``), ``join``: each server process's CPU seconds and the
    seconds from the first connect to the last join, each server process's CPU idle (``idle_cpu``, a share
    of one core), then the seconds of publishing and ``cpu``: each server process's CPU seconds and the
    seconds, from the first publish to the last delivery."""

    rooms: int
    spread: tuple
    probe: ServerProbe
    publishers: list
    rss: dict
    elapsed: float = 0.0
    idle_cpu: dict = dataclasses.field(default_factory=dict)
    join: Optional[Tuple[dict, float]] = None
    cpu: Optional[Tuple[dict, float]] = None


def publish_into(publisher, chosen, sent):
    """Publish one message into each room of ``chosen`` (indexes) at once, numbered on from ``sent``, in a thread."""
    publisher.publish_each([(b"?room=" + room_viewers.room_name(room).encode(),
                             payload.message(room, sent + n + 1, now_us()))
                            for n, room in enumerate(chosen)])


def run(parser, args):
    settings = ManyRoomsSettings.of(args)
    refused = settings.refusal()
    if refused is not None:
        parser.error(refused)
    return placement.run_each_broker(arguments.broker_runs(args), ManyRoomsRun, settings, settings.transport,
                                     console.StatusLine())
