"""The lines of a results file: one frozen dataclass per ``"type"``, the schema in one place.

Rules:

- A record's JSON object (:meth:`Record.as_dict`) is ``"type"``, then its fields in the
  order declared. Names and meanings never change (:mod:`plots`, the summary and committed
  results read them): a new figure is a new field or type. An older line lacking a field
  reads it as None (:func:`parse_older`); :func:`parse` is strict.
- Units are in the names (``_s``, ``_ms``, ``_kb`` KiB, ``_mb`` MiB, ``_us``); ``rate`` is msgs/s
  sent in total; ``*_cpu`` and ``cpu_load`` are shares of one core. ``rtt_ms`` and ``delivery_ms``
  are ``{"mean", "p50", "p95", "p99", "max"}``; an ``end`` is a :class:`loadtest.method.rules.End`.
- ``tls``: the clients connected over TLS (such a server labelled ``<label>+tls``)."""

import dataclasses
from typing import Any, ClassVar, Dict, List, Optional

TLS_SUFFIX = "+tls"
# Older names of transports, which older files hold and ``--transport`` still reads.
TRANSPORT_ALIASES = {"sockjs": "websocket"}


def transport_name(text):
    """The transport ``text`` names (an argparse ``type``): ``sockjs`` reads as ``websocket``."""
    return TRANSPORT_ALIASES.get(text, text)


@dataclasses.dataclass(frozen=True)
class Record:
    """One line of a results file."""

    TYPE: ClassVar[str] = ""

    def as_dict(self):
        """The JSON object of the line: ``"type"``, then the fields."""
        line = {"type": self.TYPE}
        for field in dataclasses.fields(self):
            line[field.name] = getattr(self, field.name)
        return line

    @classmethod
    def from_dict(cls, line):
        """The record of a JSON object with this type's fields (TypeError if they differ)."""
        return cls(**{name: value for name, value in line.items() if name != "type"})


@dataclasses.dataclass(frozen=True)
class Run(Record):
    """The first line: when, the command line, client, machine, target, transports (comma-separated)."""

    TYPE: ClassVar[str] = "run"
    started: str
    command: List[str]
    client: Dict[str, str]  # interpreter, version
    machine: Dict[str, Any]  # cpu_model, cores, kernel
    url: Optional[str]
    transport: str


@dataclasses.dataclass(frozen=True)
class Server(Record):
    """A server about to be measured: label, runtime, pid, the CPU it is pinned to, ``tls``."""

    TYPE: ClassVar[str] = "server"
    server: str
    runtime: Optional[str]
    pid: Optional[int]
    cpu: Optional[int]
    tls: bool


@dataclasses.dataclass(frozen=True)
class Step(Record):
    """One rate step at one level; ``reopened``: streams reopened and polls after the first; an older
    line without ``transport``: the run's."""

    TYPE: ClassVar[str] = "step"
    server: str
    transport: str
    level: int
    rate: float
    duration_s: float
    sent: int
    received: int
    server_msgs_per_s: float
    rtt_ms: Dict[str, Optional[float]]
    lost: int
    dropped: int
    reopened: int
    client_cpu: float
    loop_lag_ms: Dict[str, float]
    server_cpu: Optional[float]
    server_rss_kb: Optional[int]
    server_cpu_us_per_msg: Optional[float]
    client_bound: bool
    overloaded: bool
    overload_reason: Optional[str]


@dataclasses.dataclass(frozen=True)
class Level(Record):
    """How a concurrency level over ``transport`` ended (an older line without it: the run's)."""

    TYPE: ClassVar[str] = "level"
    server: str
    transport: str
    level: int
    end: str


@dataclasses.dataclass(frozen=True)
class CpuPerMsg(Record):
    """Server CPU per delivered message at ``compare``'s fixed load over one ``transport``."""

    TYPE: ClassVar[str] = "cpu_per_msg"
    server: str
    transport: str
    level: int
    rate: float
    cpu_us_per_msg: Optional[float]
    rtt_ms: Dict[str, Optional[float]]
    lost: int
    dropped: int
    reopened: int
    server_msgs_per_s: float
    server_cpu: Optional[float]
    client_cpu: float
    client_bound: bool
    overloaded: bool
    tls: bool

    @classmethod
    def of_step(cls, step, transport, tls=False):
        """From the fixed load's :class:`Step`: its fields of the same name, ``server_cpu_us_per_msg`` as ``cpu_us_per_msg``."""
        named = {field.name: getattr(step, field.name) for field in dataclasses.fields(cls) if hasattr(step, field.name)}
        return cls(**dict(named, transport=transport, cpu_us_per_msg=step.server_cpu_us_per_msg, tls=tls))


@dataclasses.dataclass(frozen=True)
class IdleRss(Record):
    """Server RSS with ``connections`` idle connections open over ``transport``, and fresh."""

    TYPE: ClassVar[str] = "idle_rss"
    server: str
    transport: str
    connections: int
    rss_kb: int
    rss_before_kb: int
    rss_per_conn_kb: float
    failed: int
    tls: bool


@dataclasses.dataclass(frozen=True)
class Floor(Record):
    """The bare send loop (:mod:`loadtest.scenarios.floor`): CPU per send to ``connections`` loopback sockets."""

    TYPE: ClassVar[str] = "floor"
    connections: int
    rate: float
    frame_bytes: int
    cpu: Optional[int]
    runtime: str
    drain_ok: bool
    duration_s: float
    sends: int
    blocked: int
    sends_per_s: float
    cpu_load: float
    cpu_us_per_send: Optional[float]


@dataclasses.dataclass(frozen=True)
class SoakSample(Step):
    """One sample of a soak: a step, the time under load at its end, what ``/stats`` said the server held."""

    TYPE: ClassVar[str] = "soak_sample"
    elapsed_s: float
    server_held: Optional[Dict[str, Optional[int]]] = None

    @classmethod
    def of_step(cls, step, elapsed_s, server_held=None):
        return cls(**{field.name: getattr(step, field.name) for field in dataclasses.fields(step)},
                   elapsed_s=elapsed_s, server_held=server_held)


@dataclasses.dataclass(frozen=True)
class Soak(Record):
    """A server's soak summed up (see :mod:`loadtest.scenarios.soak` and :func:`loadtest.method.memory_verdict.growth`)."""

    TYPE: ClassVar[str] = "soak"
    server: str
    clients: int
    rate: float
    sample_s: float
    warmup_s: float
    duration_s: float
    samples: int
    rss_after_warmup_kb: Optional[int]
    warmup_at_s: Optional[float]
    final_rss_kb: Optional[int]
    final_at_s: Optional[float]
    growth_mb: Optional[float]
    growth_mb_per_h: Optional[float]
    growth_pct: Optional[float]
    verdict: Optional[str]
    lost: int
    dropped: int
    end: str


@dataclasses.dataclass(frozen=True)
class ChurnWave(Record):
    """One churn wave; ``open_cpu_us``: server CPU while it opened, per session opened."""

    TYPE: ClassVar[str] = "churn_wave"
    server: str
    wave: int
    opened: Dict[str, int]
    failed: Dict[str, int]
    held_connections: Optional[int]
    held_rss_kb: int
    connections: Optional[int]
    rss_kb: int
    open_cpu_us: Optional[float]


@dataclasses.dataclass(frozen=True)
class Churn(Record):
    """A server's churn summed up (see :mod:`loadtest.client.churn`)."""

    TYPE: ClassVar[str] = "churn"
    server: str
    waves: int
    size: int
    hold_s: float
    baseline_connections: Optional[int]
    baseline_rss_kb: int
    final_connections: Optional[int]
    final_rss_kb: int
    settled: Optional[bool]
    settle_s: float
    growth_mb: float
    verdict: str


@dataclasses.dataclass(frozen=True)
class FeedSample(Record):
    """One sample of a feed: since the last, published, delivered, how late; RSS and CPU by process."""

    TYPE: ClassVar[str] = "feed_sample"
    server: str
    elapsed_s: float
    published: int
    received: int
    alive: int
    delivery_ms: Dict[str, Optional[float]]
    rss_kb: Dict[str, int]
    cpu: Dict[str, float]
    client_cpu: float


@dataclasses.dataclass(frozen=True)
class Feed(Record):
    """A feed summed up: the cluster, the audience, every delivery's lateness, what was lost."""

    TYPE: ClassVar[str] = "feed"
    server: str
    brokers: int
    clients: int
    connected: int
    connect_s: float
    rate: float
    duration_s: float
    published: int
    received: int
    short: int
    extra: int
    dropped: int
    drop_reasons: Dict[str, int]
    delivery_ms: Dict[str, Optional[float]]
    connected_rss_kb: Dict[str, int]
    final_rss_kb: Dict[str, int]
    end: str
    publish: str = "plain"  # what went to POST /publish: plain messages, keyed (?key=), counter (adds)
    publish_ms: Optional[Dict[str, Optional[float]]] = None  # each POST /publish until its answer
    cpu_s: Optional[Dict[str, float]] = None  # each server process's CPU, first publish to last sample
    counter_totals: Optional[Dict[str, Optional[str]]] = None  # counter: each broker's total at the end


@dataclasses.dataclass(frozen=True)
class Storm(Record):
    """A reconnect storm summed up: ``complete`` clients had every message once."""

    TYPE: ClassVar[str] = "storm"
    server: str
    brokers: int
    transport: str
    clients: int
    connected: int
    rate: float
    backoff_s: float
    published: int
    complete: int
    holes: int
    duplicates: int
    replayed: int
    gaps: Dict[str, int]
    reconnect_failures: Dict[str, int]
    not_caught_up: int
    caught_up_ms: Dict[str, Optional[float]]
    delivery_ms: Dict[str, Optional[float]]
    end: str


@dataclasses.dataclass(frozen=True)
class RollingSecond(Record):
    """One second of a rolling restart from the first publish (:class:`loadtest.method.timeline.Second`)."""

    TYPE: ClassVar[str] = "rolling_second"
    server: str
    drain_s: float
    second: int
    connections: List[int]
    new_sessions: List[int]
    delivered: int
    delivery_ms: Dict[str, Optional[float]]  # p50, p99, max


@dataclasses.dataclass(frozen=True)
class BrokerRestart(Record):
    """One broker's restart (from 1), in seconds since the first publish; ``exit_code`` None: it was
    killed; ``healthy_s`` None: no ``/healthz`` 200."""

    TYPE: ClassVar[str] = "broker_restart"
    server: str
    drain_s: float
    broker: int
    sigterm_s: float
    exited_s: float
    exit_code: Optional[int]
    listening_s: float
    healthy_s: Optional[float]


@dataclasses.dataclass(frozen=True)
class Rolling(Record):
    """A rolling restart summed up (:mod:`loadtest.method.rolling_verdict`): ``duplicated``, all
    told, of which ``resent`` were dropped by offset (not a failure; the rest, :attr:`twice`);
    the busiest second of new sessions (``peak_broker`` from 1), p99s, ``failures`` (none: passed)."""

    TYPE: ClassVar[str] = "rolling"
    server: str
    drain_s: float
    backoff_s: float
    brokers: int
    transport: str
    clients: int
    connected: int
    rate: float
    published: int
    complete: int
    lost: int
    duplicated: int
    resent: int
    gaps: Dict[str, int]
    never_back: int
    reconnect_failures: Dict[str, int]
    ends: Dict[str, int]
    restart_s: Optional[List[int]]  # the first and last second of the restarts
    peak_new_sessions: int
    peak_second: Optional[int]
    peak_broker: Optional[int]
    new_sessions_bound: Optional[float]
    steady_p99_ms: Optional[float]
    restart_p99_ms: Optional[float]
    worst_second_p99_ms: Optional[float]
    p99_bound_ms: Optional[float]
    failures: List[str]
    end: str
    haproxy: int = 0  # haproxy processes between the clients and the brokers
    proxy_answers: Optional[Dict[str, int]] = None  # their answers by status
    signal: str = "TERM"  # how each broker was stopped: TERM (a deploy), KILL (a crash)
    uncut_p99_ms: Optional[float] = None  # p99 during the restarts of the clients whose connection never ended
    first_connect_failures: Optional[Dict[str, int]] = None  # first connections that failed, each tried again
    fail: str = "brokers"  # what failed: brokers (restarted in turn) or redis-primary (SIGKILLed once)
    redis: str = "one"  # what the brokers joined: one redis-server, or sentinels (a primary, replicas, Sentinels)
    silent: int = 0  # numbers a client skipped with no gap told before
    delivered: int = 0  # deliveries from second 0 on
    broker_cpu_s: Optional[float] = None  # the brokers' CPU seconds from second 0 on, without a restart
    unavailable_s: Optional[float] = None  # from the first refused publish to the first accepted after it
    catch_up_ms: Optional[Dict[str, float]] = None  # p50, p99: from the kill to the first message published after
    publish_ms: Optional[Dict[str, float]] = None  # p50, p99 of the accepted publishes' round trips

    @property
    def killed(self):
        """Whether its brokers were killed (a crash), not drained (a deploy; every older line)."""
        return self.signal not in (None, "TERM")

    @property
    def twice(self):
        """Messages the application was given again (a line older than ``resent`` counts those too)."""
        return self.duplicated - (self.resent or 0)


@dataclasses.dataclass(frozen=True)
class ManyRooms(Record):
    """One run of ``rooms`` (:mod:`loadtest.scenarios.many_rooms`) at one number of rooms, published
    through each of the ``brokers`` in turn or the first only (``publish_at``: each, first). ``viewers``
    over ``transport``, each in ``rooms_per_viewer`` rooms over one session, spread by ``skew``
    (:mod:`loadtest.method.skew`; room 0, the hot room, has ``hot_viewers``); ``room_rate``: messages
    a second per room on average, each to a room drawn at random (``rate`` = rooms x room_rate);
    ``published`` in ``duration_s``, ``received`` (``deliveries_per_s``), ``foreign``: messages a
    viewer got of a room it did not join (0, or isolation is broken); ``short``/``extra``: against
    each viewer's rooms' publishes; ``connections``: the viewers' sessions held at the end;
    ``rtt_ms``, ``hot_rtt_ms``, ``tail_rtt_ms``: publish to delivery, all, the hot room's, the
    others'; ``cpu_us_per_delivery``: the servers' CPU (a cluster's Redis too) from the first publish
    until the last delivery (or ``LOSS_AFTER_S`` more) over the deliveries, ``server_cpu`` its share of
    a core, ``cpu_s`` each process's CPU seconds then (``broker1``..., ``redis``), over ``cpu_window_s``;
    ``idle_cpu`` each process's share of a core idle with the viewers joined, before the first publish; the
    servers' RSS, summed: ``rss_start_kb`` fresh, ``rss_idle_kb`` with ``idle_rooms`` empty
    rooms made (a publish into each; ``rss_per_idle_room_kb``), ``rss_joined_kb`` with the viewers
    connected too (``rss_per_joined_room_kb``: over ``rooms``, their viewers' sessions included),
    ``rss_end_kb`` at the end. ``private``: the rooms were private, each viewer joined with a token
    (``--private``); the joins: ``join_s`` from the first viewer's connect to the brokers' ``/stats``
    counting every viewer's rooms joined, ``joins_per_s`` the viewers over it, ``join_cpu_s`` each
    process's CPU seconds then, ``cpu_us_per_join`` their sum over the viewers (an older line: None)."""

    TYPE: ClassVar[str] = "rooms"
    server: str
    brokers: int
    publish_at: str
    transport: str
    rooms: int
    viewers: int
    rooms_per_viewer: int
    skew: str
    hot_viewers: int
    room_rate: float
    rate: float
    duration_s: float
    published: int
    received: int
    deliveries_per_s: float
    foreign: int
    short: int
    extra: int
    dropped: int
    drop_reasons: Dict[str, int]
    connections: int
    rtt_ms: Dict[str, Optional[float]]
    hot_rtt_ms: Dict[str, Optional[float]]
    tail_rtt_ms: Dict[str, Optional[float]]
    cpu_us_per_delivery: Optional[float]
    server_cpu: Optional[float]
    cpu_s: Dict[str, float]
    cpu_window_s: Optional[float]
    idle_cpu: Dict[str, float]
    idle_rooms: int
    rss_start_kb: int
    rss_idle_kb: int
    rss_per_idle_room_kb: Optional[float]
    rss_joined_kb: int
    rss_per_joined_room_kb: float
    rss_end_kb: int
    end: str
    private: bool = False
    join_s: Optional[float] = None
    joins_per_s: Optional[float] = None
    join_cpu_s: Optional[Dict[str, float]] = None
    cpu_us_per_join: Optional[float] = None


TYPES = {kind.TYPE: kind for kind in (Run, Server, Step, Level, CpuPerMsg, IdleRss, Floor, SoakSample, Soak,
                                      ChurnWave, Churn, FeedSample, Feed, Storm, RollingSecond, BrokerRestart,
                                      Rolling, ManyRooms)}


def parse(line):
    """The record of a results line (a JSON object), by its ``"type"``; KeyError or TypeError if it has none such."""
    return TYPES[line["type"]].from_dict(line)


def parse_older(line):
    """The record of a line of this version or older (a missing field None); None for an unknown type."""
    kind = TYPES.get(line.get("type"))
    if kind is None:
        return None
    return kind(**{field.name: line.get(field.name) for field in dataclasses.fields(kind)})
