"""What a results file says, without drawing: latency curves, realtime capacity, RSS over time, rolling restarts, the summary tables.

Everything here is pure: it takes the records of one results file (see
:mod:`loadtest.results.files`) and returns plain values and text. ``compare`` prints
its tables when a run ends; :mod:`plots` draws its curves and writes its tables
beside the figures.
"""

import collections
import dataclasses

from loadtest import records as schema
from loadtest.method import rules
from loadtest.method.memory_verdict import FLAT_MIN_MB, FLAT_SHARE, KB_PER_MB
from loadtest.method.rules import REALTIME_MS, End

REFERENCE = "sockjs-node"
SERVER = "server"
CLIENT = "client-bound"

Curve = collections.namedtuple("Curve", "server transport level points")
# A step of a curve: ``overloaded`` as its record says; ``client_limited`` when the load client, not
# the server, was saturated there (:func:`loadtest.method.rules.client_limited`): the step measured the client.
Point = collections.namedtuple("Point", "msgs_per_s rtt_ms overloaded client_limited")
# One rolling restart: its server and drain, its rolling_second records in order, its
# broker_restart records and its rolling record (None if the run did not end).
RollingRun = collections.namedtuple("RollingRun", "server drain_s seconds restarts summary")
Capacity = collections.namedtuple("Capacity", "server transport level msgs_per_s rate ratio limit")


class Results:
    """The records of one results file (:mod:`loadtest.records`), sorted by type; servers in
    the order they were measured. A step, level, fixed load or idle connections of an older file,
    without its transport, measured the run's."""

    def __init__(self, records):
        def of(kind):
            return [r for r in records if type(r) is kind]

        self.run = next(iter(of(schema.Run)), None)
        self.runtimes = collections.OrderedDict()
        for record in records:
            if type(record) is schema.Server:
                self.runtimes[record.server] = record.runtime
            elif hasattr(record, "server"):
                self.runtimes.setdefault(record.server, None)
        transport = self.run and schema.transport_name(self.run.transport)
        self.steps = [_over(record, transport) for record in of(schema.Step)]
        self.level_ends = {(r.server, r.transport, r.level): r.end
                           for r in (_over(record, transport) for record in of(schema.Level))}
        self.cpu_per_msg = [_over(record, transport) for record in of(schema.CpuPerMsg)]
        self.idle_rss = [_over(record, transport) for record in of(schema.IdleRss)]
        self.floor = next(iter(of(schema.Floor)), None)
        self.soak_samples = of(schema.SoakSample)
        self.soaks = of(schema.Soak)
        self.churns = of(schema.Churn)
        self.rolling_seconds = of(schema.RollingSecond)
        self.broker_restarts = of(schema.BrokerRestart)
        self.rollings = of(schema.Rolling)
        self.many_rooms = of(schema.ManyRooms)

    @property
    def servers(self):
        return list(self.runtimes)

    @property
    def transports(self):
        """Every transport of the steps, fixed loads and idle connections, in the order first met."""
        return list(dict.fromkeys(record.transport for record in self.steps + self.cpu_per_msg + self.idle_rss))


def _over(record, transport):
    """``record``, its transport ``transport`` if it has none."""
    return record if record.transport is not None else dataclasses.replace(record, transport=transport)


def curves(results, statistic="mean"):
    """One :class:`Curve` per server, transport and level, its steps as :class:`Point`."""
    grouped = collections.OrderedDict()
    for server in results.servers:
        for step in results.steps:
            if step.server != server or step.rtt_ms.get(statistic) is None:
                continue
            point = Point(step.server_msgs_per_s, step.rtt_ms[statistic], step.overloaded,
                          rules.client_limited(step.client_bound, step.server_cpu))
            grouped.setdefault((server, step.transport, step.level), []).append(point)
    return [Curve(*key, points) for key, points in grouped.items()]


def realtime_capacity(results):
    """For each server, transport and level, the highest server msgs/s of a healthy step with mean
    RTT <= ``REALTIME_MS`` before the level's first step past realtime: the knee (a step back
    within realtime after one past it does not show a rate the server keeps).

    ``rate`` is the msgs/s that step offered; ``ratio`` compares its msgs/s with
    sockjs-node's over the same transport at the same level, only where the server stopped both
    (None otherwise: a lower bound set against a limit is no ratio of the two); ``limit`` says
    what stopped it: ``SERVER`` or ``CLIENT`` by the first step past realtime
    (:func:`loadtest.method.rules.client_limited`), else the level's end (an
    :class:`End`, None without one): the server's limit then lies above.
    """
    best = collections.OrderedDict()
    broke = {}
    for server in results.servers:
        for step in results.steps:
            if step.server != server:
                continue
            key = (server, step.transport, step.level)
            best.setdefault(key, None)
            if rules.past_realtime(step.overloaded, step.rtt_ms["mean"]):
                broke.setdefault(key, step)
            elif key not in broke and (best[key] is None or step.server_msgs_per_s > best[key].server_msgs_per_s):
                best[key] = step
    limits = {}
    for key in best:
        if key in broke:
            limits[key] = CLIENT if rules.client_limited(broke[key].client_bound, broke[key].server_cpu) else SERVER
        else:
            limits[key] = End.of(results.level_ends.get(key, ""))
    rows = []
    for (server, transport, level), step in best.items():
        value = step and step.server_msgs_per_s
        key, reference_key = (server, transport, level), (REFERENCE, transport, level)
        reference = best.get(reference_key)
        both_limits = limits[key] == SERVER and limits.get(reference_key) == SERVER
        ratio = value / reference.server_msgs_per_s if value is not None and reference and both_limits else None
        rows.append(Capacity(server, transport, level, value, step and step.rate, ratio, limits[key]))
    return rows


def rss_series(results):
    """Per server, in the order measured: ``(minutes under load, RSS in MB)`` of each soak sample."""
    series = collections.OrderedDict()
    for server in results.servers:
        points = [(s.elapsed_s / 60.0, s.server_rss_kb / KB_PER_MB) for s in results.soak_samples
                  if s.server == server and s.server_rss_kb is not None]
        if points:
            series[server] = points
    return series


def rolling_runs(results):
    """Every rolling restart of the results, a :class:`RollingRun` each, in the order they ran."""
    keys = list(dict.fromkeys((r.server, r.drain_s) for r in results.rolling_seconds + results.rollings))
    return [RollingRun(server, drain_s,
                       sorted((r for r in results.rolling_seconds if (r.server, r.drain_s) == (server, drain_s)),
                              key=lambda r: r.second),
                       [r for r in results.broker_restarts if (r.server, r.drain_s) == (server, drain_s)],
                       next((r for r in results.rollings if (r.server, r.drain_s) == (server, drain_s)), None))
            for server, drain_s in keys]


def rooms_series(results):
    """The ``rooms`` runs (:class:`loadtest.records.ManyRooms`) by load, in the order first measured: ``{label:
    [runs by number of rooms]}``, a load being its server, transport, viewers, rooms per viewer, skew and rate."""
    series = collections.OrderedDict()
    for run in results.many_rooms:
        label = "%s over %s, %s viewers x %d room%s, %s, %g msgs/s a room" % (
            run.server, run.transport, "{:,}".format(run.viewers), run.rooms_per_viewer,
            "" if run.rooms_per_viewer == 1 else "s", run.skew, run.room_rate)
        series.setdefault(label, []).append(run)
    return collections.OrderedDict((label, sorted(runs, key=lambda run: run.rooms)) for label, runs in series.items())


def subtitle(results):
    """Machine, runtimes and date of the run, for figure subtitles."""
    run = results.run
    machine = (run and run.machine) or {}
    parts = []
    if machine.get("cpu_model"):
        parts.append("%s, %s cores" % (machine["cpu_model"], machine.get("cores", "?")))
    if machine.get("kernel"):
        parts.append("Linux %s" % machine["kernel"])
    runtimes = sorted({runtime for runtime in results.runtimes.values() if runtime})
    if runtimes:
        parts.append(", ".join(runtimes))
    if run and run.started:
        parts.append(run.started[:10])
    return " · ".join(parts)


def fixed_loads(results):
    """The ``(clients, rate)`` of every fixed load measured, in the order first met."""
    return list(dict.fromkeys((r.level, r.rate) for r in results.cpu_per_msg))


def plain_server(server):
    """The label of ``server`` measured plain, if it is a server measured over TLS (``broker-pypy+tls``); else None."""
    if server.endswith(schema.TLS_SUFFIX):
        return server[:-len(schema.TLS_SUFFIX)]
    return None


def cost_rows(results, load=None):
    """Per transport, then per server: CPU per delivered message at the fixed ``load`` (default:
    the first one) and RSS per idle connection, with ratios to sockjs-node's over the same transport,
    and for a server over TLS, to its own CPU and RSS plain (``vs_plain``, ``rss_vs_plain``) where the
    run measured it so too."""
    loads = fixed_loads(results)
    load = load or (loads[0] if loads else None)
    cpu = {(r.transport, r.server): r for r in results.cpu_per_msg if (r.level, r.rate) == load}
    rss = {(r.transport, r.server): r for r in results.idle_rss}
    floor = results.floor.cpu_us_per_send if results.floor else None
    rows = []
    for transport, server in ((t, s) for t in results.transports for s in results.servers):
        at_load, idle = cpu.get((transport, server)), rss.get((transport, server))
        if at_load is None and idle is None:
            continue
        reference_cpu, reference_rss = cpu.get((transport, REFERENCE)), rss.get((transport, REFERENCE))
        plain = plain_server(server)
        plain_cpu, plain_rss = cpu.get((transport, plain)), rss.get((transport, plain))
        us = at_load and at_load.cpu_us_per_msg
        kb = idle and idle.rss_per_conn_kb
        rtt = (at_load and at_load.rtt_ms) or {}
        rows.append({
            "transport": transport,
            "server": server,
            "runtime": results.runtimes.get(server),
            "cpu_us_per_msg": us,
            "vs_reference": _ratio(us, reference_cpu and reference_cpu.cpu_us_per_msg),
            "vs_plain": _ratio(us, plain_cpu and plain_cpu.cpu_us_per_msg),
            "vs_floor": _ratio(us, floor),
            "p50_ms": rtt.get("p50"),
            "p99_ms": rtt.get("p99"),
            "lost": at_load and at_load.lost,
            "rss_per_conn_kb": kb,
            "rss_vs_reference": _ratio(kb, reference_rss and reference_rss.rss_per_conn_kb),
            "rss_vs_plain": _ratio(kb, plain_rss and plain_rss.rss_per_conn_kb),
        })
    return rows


def _ratio(value, reference):
    return value / reference if value is not None and reference else None


def rst_table(headers, rows):
    """An RST simple table."""
    cells = [list(headers)] + [[_text(cell) for cell in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    rule = "  ".join("=" * width for width in widths)
    lines = [rule, _row(cells[0], widths), rule]
    lines.extend(_row(row, widths) for row in cells[1:])
    lines.append(rule)
    return "\n".join(lines)


def _row(cells, widths):
    return "  ".join(cell.ljust(width) for cell, width in zip(cells, widths)).rstrip()


def _text(cell):
    """A cell on one line: a server's answer quoted in a verdict may hold line breaks."""
    if cell is None:
        return "-"
    return " ".join((cell if isinstance(cell, str) else str(cell)).split())


def _rate(value):
    return None if value is None else "{:,.0f}".format(value)


def _capacity(row):
    if row.msgs_per_s is None:
        return None
    return _rate(row.msgs_per_s) + ("" if row.limit == SERVER else "+")


def _limit(row):
    return row.limit.value if isinstance(row.limit, End) else row.limit


def _times(value):
    return None if value is None else "%.2fx" % value


def _number(value, digits=1):
    return None if value is None else "%.*f" % (digits, value)


def summary_rst(results):
    """The summary as RST: realtime capacity per server and level, then the costs per server
    (each per transport, in a column of its own, when the run measured several; and each
    ``vs plain``, when it measured servers over TLS beside themselves plain)."""
    sections = []
    # One transport (or mix) is named in the titles; several get a column.
    over = " over %s" % results.transports[0] if len(results.transports) == 1 and results.transports[0] else ""
    capacity = realtime_capacity(results)
    if capacity:
        headers = ("server", "clients", "msgs/s", "rate/s", "vs %s" % REFERENCE, "stopped by")
        rows = [(c.server, c.level, _capacity(c), _rate(c.rate), _times(c.ratio), _limit(c)) for c in capacity]
        title = "Highest server messages/s%s with mean round trip <= %.0f ms" % (over, REALTIME_MS)
        if len({c.transport for c in capacity}) > 1:
            title += "; ratios to %s over the same transport" % REFERENCE
            order = {transport: index for index, transport in enumerate(results.transports)}
            headers = ("transport",) + headers
            rows = [(c.transport,) + row for c, row in sorted(zip(capacity, rows),
                                                              key=lambda pair: order[pair[0].transport])]
        sections.append(title + "\n\n" + rst_table(headers, rows))
        sections[-1] += (
            "\n\nmsgs/s: delivered by the server; rate/s: sent by the clients in total. Stopped by: ``%s``\n"
            "when the next step was past realtime with the server saturated or the client not; ``%s``\n"
            "when the client, not the server, was saturated there (a faster client goes further); otherwise\n"
            "what ended the level. ``+``: not stopped by the server, so its limit lies above." % (SERVER, CLIENT))
    for index, load in enumerate(fixed_loads(results) or [None]):
        costs = cost_rows(results, load)
        if not costs:
            continue
        title = "Cost per delivered message" + over
        if load:
            title += " at %d clients x %s msgs/s" % (load[0], _rate(load[1]))
        if index == 0 and results.floor and results.floor.cpu_us_per_send is not None:
            title += "; floor (bare send loop): %.2f us per send" % results.floor.cpu_us_per_send
        headers = ("server", "runtime", "CPU us/msg", "vs %s" % REFERENCE, "vs floor", "p50 ms", "p99 ms",
                   "lost", "idle KiB/conn", "vs %s" % REFERENCE)
        rows = [(c["server"], c["runtime"], _number(c["cpu_us_per_msg"], 2), _times(c["vs_reference"]),
                 _times(c["vs_floor"]) if index == 0 else None, _number(c["p50_ms"]), _number(c["p99_ms"]),
                 c["lost"], _number(c["rss_per_conn_kb"]), _times(c["rss_vs_reference"])) for c in costs]
        if any(c["vs_plain"] is not None or c["rss_vs_plain"] is not None for c in costs):
            title += "; vs plain: a server over TLS (+tls) against itself plain"
            headers = headers[:4] + ("vs plain",) + headers[4:] + ("vs plain",)
            rows = [row[:4] + (_times(c["vs_plain"]),) + row[4:] + (_times(c["rss_vs_plain"]),)
                    for c, row in zip(costs, rows)]
        if len(results.transports) > 1:
            title += "; ratios to %s over the same transport" % REFERENCE
            headers = ("transport",) + headers
            rows = [(c["transport"],) + row for c, row in zip(costs, rows)]
        sections.append(title + "\n\n" + rst_table(headers, rows))
    if results.soaks:
        sections.append(_soak_section(results))
    if results.churns:
        sections.append(_churn_section(results))
    if results.rollings:
        sections.append("Rolling restarts: every broker of a cluster restarted in turn, with a drain and "
                        "without\n\n" + rolling_table(results.rollings))
    if results.many_rooms:
        sections.append("Rooms: viewers spread over rooms, publishes to random rooms; hot: room 0\n\n" +
                        rooms_table(results.many_rooms))
    return "\n\n".join(sections) + "\n"


def _mb(kb):
    return None if kb is None else "%.1f" % (kb / KB_PER_MB)


def _signed(value):
    return None if value is None else "%+.1f" % value


def _soak_section(results):
    load = results.soaks[0]
    title = ("Memory under a held load of %d clients x %s msgs/s; \"flat\": at most %g %% or %g MB above "
             "the RSS after the %g s warm-up" % (load.clients, _rate(load.rate), FLAT_SHARE * 100,
                                                 FLAT_MIN_MB, load.warmup_s))
    headers = ("server", "runtime", "minutes", "RSS after warm-up MB", "final RSS MB", "growth MB/h",
               "growth %", "lost", "dropped", "verdict")
    rows = [(r.server, results.runtimes.get(r.server), _number(r.duration_s / 60.0),
             _mb(r.rss_after_warmup_kb), _mb(r.final_rss_kb), _signed(r.growth_mb_per_h),
             _signed(r.growth_pct), r.lost, r.dropped,
             r.verdict if End.of(r.end) is End.COMPLETED else "%s (%s)" % (r.verdict or "-", r.end))
            for r in results.soaks]
    return title + "\n\n" + rst_table(headers, rows)


def _churn_section(results):
    churn = results.churns[0]
    title = "Churn: %d waves of %d sessions per transport, websocket, xhr-streaming and abandoned xhr-polling" % (
        churn.waves, churn.size)
    headers = ("server", "sessions before", "sessions after", "waited s", "RSS before MB", "RSS after MB",
               "verdict")
    rows = [(r.server, r.baseline_connections, r.final_connections, _number(r.settle_s),
             _mb(r.baseline_rss_kb), _mb(r.final_rss_kb), r.verdict) for r in results.churns]
    return title + "\n\n" + rst_table(headers, rows)


def rolling_table(rollings):
    """The :class:`loadtest.records.Rolling` records as an RST table: what each run lost,
    delivered twice or had resent (dropped by offset), its peak of new sessions a second at
    any broker and its p99 during the restarts, each beside its bound (none without a
    drain), that of the clients not cut yet (``uncut``; judged for a crash), and the verdict. A run whose brokers were killed (a crash) says ``SIGKILL`` for its
    drain."""
    headers = ("server", "drain s", "clients", "published", "lost", "twice", "resent", "gaps", "peak new/s",
               "bound", "steady p99 ms", "restart p99 ms", "uncut p99 ms", "bound", "verdict")
    rows = [(r.server, "SIG" + r.signal if r.killed else "%g" % r.drain_s, "{:,}".format(r.clients), r.published,
             r.lost, r.twice,
             _number(r.resent, 0), sum(r.gaps.values()),
             "%d at broker %s" % (r.peak_new_sessions, r.peak_broker or "-"),
             _number(r.new_sessions_bound, 0), _number(r.steady_p99_ms), _number(r.restart_p99_ms),
             _number(r.uncut_p99_ms), _number(r.p99_bound_ms), "; ".join(r.failures) or "passed") for r in rollings]
    return rst_table(headers, rows)


def rooms_table(runs):
    """The :class:`loadtest.records.ManyRooms` records as an RST table: each run's load, its round trips (all,
    the hot room's and the tail's p99), CPU per delivery, RSS per idle and per joined room, connections, and
    what went wrong (``foreign``: another room's messages, which must be none)."""
    headers = ("server", "transport", "rooms", "viewers", "each in", "skew", "deliveries/s", "p50 ms", "p99 ms",
               "hot p99", "tail p99", "CPU us/delivery", "KiB/idle room", "KiB/joined room", "connections",
               "foreign", "short", "dropped")
    rows = [(r.server, r.transport, r.rooms, r.viewers, r.rooms_per_viewer, r.skew, _rate(r.deliveries_per_s),
             _number(r.rtt_ms["p50"]), _number(r.rtt_ms["p99"]), _number(r.hot_rtt_ms["p99"]),
             _number(r.tail_rtt_ms["p99"]), _number(r.cpu_us_per_delivery, 2), _number(r.rss_per_idle_room_kb, 2),
             _number(r.rss_per_joined_room_kb, 2), r.connections, r.foreign, r.short, r.dropped) for r in runs]
    return rst_table(headers, rows)
