"""``python -m loadtest rolling``: deploy day, a cluster's brokers restarted one at a time, with a drain and without.

What it runs and how to read it: docs/load-testing.rst, "Deploy day". Rules:

- One run per ``--drain-seconds``, each on a fresh cluster; resuming subscribers follow it,
  directly or through ``--haproxy`` processes (then the brokers' own counts say who holds
  which session). If any fails to connect, the run ends there.
- Second 0 is the first publish, never to a broker being restarted. Each restart: SIGTERM
  (or SIGKILL), the drain plus ``EXIT_GRACE_S`` to exit, start again on the same port,
  ``/healthz`` 200 within ``HEALTH_TIMEOUT_S``.
- Records: a ``broker_restart`` per broker, a ``rolling_second`` per second, a ``rolling``
  with the verdict (:mod:`loadtest.method.rolling_verdict`), how the run ended, the clients
  that never came back and any broker that did not exit as stopped. Exit 0 when every run passed.
- ``--fail redis-primary`` (with ``--redis sentinels``, the feed retrying refused publishes):
  no broker is restarted; the primary is SIGKILLed ``--before`` seconds in, and ``--after``
  seconds of publishing follow the first publish accepted again. The run counts the seconds
  publishes were refused and, per client, the time from the kill until it delivered the
  first message published after it.
- Without a restart, the brokers' CPU seconds from second 0 to the end are recorded."""

import asyncio
import collections
import contextlib
import dataclasses
import os
import signal
import tempfile
import time
from typing import Optional, Tuple

from loadtest import arguments, procstat, records
from loadtest.client import connections, server_probe, workers
from loadtest.client.broker_counts import BrokerCounts
from loadtest.client.numbered_feed import NumberedFeed
from loadtest.client.rolling_clients import RollingGroup
from loadtest.client.storm_clients import connect_all
from loadtest.contenders import haproxy, placement, redis_sentinel, registry
from loadtest.errors import LoadTestError
from loadtest.framing import endpoints
from loadtest.method import rolling_verdict, timeline
from loadtest.method.rules import End
from loadtest.results import console, files, summary

# Seconds a broker may take to exit beyond its drain, and to answer /healthz 200 once listening.
EXIT_GRACE_S = 10.0
# A broker holding more than its share of the cluster drains up to this many times its
# --drain-seconds (broker.core.drain.MAX_STRETCH).
DRAIN_STRETCH = 2.0
HEALTH_TIMEOUT_S = 30.0
# The most seconds a failover may refuse publishes: a publish refused longer ends the run.
FAILOVER_TIMEOUT_S = 60.0

SUMMARY = "deploy day: a cluster's brokers restarted in turn, with a drain and without"
DESCRIPTION = ("Start a cluster of brokers joined through Redis, connect resuming subscribers, publish numbered "
               "messages, and restart the brokers one at a time as a deploy does (SIGTERM, exit, start again "
               "on the same port, /healthz 200): second by second, the connections each broker holds, the new "
               "sessions it takes and how late messages arrive, once for each --drain-seconds, so that a "
               "drain and no drain stand side by side; and whether anything was lost or delivered twice.")


# The options of a run but --servers, the transports and the placement: (flag, type, default, help).
OPTIONS = (
    ("--clients", arguments.positive_int, 15000, "subscribers in all"),
    ("--rate", arguments.positive_float, 2.0, "messages published per second"),
    ("--drain-seconds", arguments.comma_list(arguments.non_negative_float), [10.0, 0.0],
     "comma-separated: one run with each, its brokers run with this --drain-seconds (default 10,0: a drain of "
     "10 s, then none)"),
    ("--before", arguments.positive_float, 10.0, "seconds of publishing before the first restart: the steady state"),
    ("--restarts", arguments.non_negative_int, None,
     "brokers restarted, in turn (default: every one); 0: none, a steady run through the cluster for --before "
     "and --after seconds, in which no connection may end (through --haproxy: every session stays on its "
     "broker); give it one --drain-seconds"),
    ("--pause", arguments.non_negative_float, 5.0,
     "seconds between a broker answering /healthz 200 again and the next one's SIGTERM"),
    ("--after", arguments.positive_float, 5.0, "seconds of publishing after the last broker is back"),
    ("--backoff", arguments.non_negative_float, 1.0,
     "a client whose connection ends comes back after a delay drawn in [0, this] seconds (the shipped client's "
     "after a 3012)"),
    ("--catch-up", arguments.positive_float, 30.0, "seconds the clients get, after the last publish, to deliver it"),
    ("--haproxy", arguments.non_negative_int, 0,
     "haproxy processes run by deploy/haproxy.cfg between the clients and the brokers, the clients spread over "
     "them; 0: the clients go straight to the brokers (default)"),
    ("--signal", arguments.name_from("signal", ("TERM", "KILL")), "TERM",
     "how each broker is stopped: TERM, as a deploy stops it, or KILL, as a crash does (with --drain-seconds 0)"),
    ("--broker-flags", arguments.broker_flags, "",
     "more broker flags for every run, one string (e.g. \"--max-accept-rate 300\")"),
    ("--redis", arguments.name_from("backplane", ("one", "sentinels")), "one",
     "what the brokers join: one redis-server, or sentinels: a primary, two replicas and three Sentinels "
     "(redis+sentinel://), the feed retrying refused publishes with their Idempotency-Key"),
    ("--fail", arguments.name_from("failure", ("brokers", "redis-primary")), "brokers",
     "what fails: brokers, restarted in turn; or redis-primary (with --redis sentinels): no broker restarted, "
     "the primary SIGKILLed once, --before seconds in"),
    ("--source-addresses", arguments.parse_source_addresses, (),
     "local addresses to spread the clients over, e.g. 127.0.0.2-127.0.0.241 (haproxy limits the requests of "
     "each address)"),
)
SIGNALS = {"TERM": signal.SIGTERM, "KILL": signal.SIGKILL}
# The header haproxy's config sets, which the brokers believe from loopback behind it.
FORWARDED_FOR = ["--client-address-header", "X-Forwarded-For"]


def add_arguments(parser):
    for flag, kind, default, text in OPTIONS:
        arguments.option(parser, flag, type=kind, default=default, help=text)
    arguments.add_transport_or_mix(parser)
    arguments.add_broker_run_arguments(parser, registry.CLUSTERS, ["cluster-cpython"])


@dataclasses.dataclass(frozen=True)
class RollingSettings:
    """A rolling run's own options (:data:`OPTIONS`, ``--broker-flags`` as words), and its ``transport``: the
    ``--transport`` or the ``--mix``."""

    clients: int
    rate: float
    drain_seconds: Tuple[float, ...]
    before: float
    restarts: Optional[int]
    pause: float
    after: float
    backoff: float
    catch_up: float
    haproxy: int
    signal: str
    broker_flags: Tuple[str, ...]
    redis: str
    fail: str
    source_addresses: Tuple[str, ...]
    transport: str

    @classmethod
    def of(cls, args):
        """The settings of the command's parsed arguments."""
        return cls(args.clients, args.rate, tuple(args.drain_seconds), args.before, args.restarts, args.pause,
                   args.after, args.backoff, args.catch_up, args.haproxy, args.signal, tuple(args.broker_flags.split()),
                   args.redis, args.fail, tuple(args.source_addresses), args.mix or args.transport)


class RollingRun(placement.BrokerRun):
    """One rolling restart of one cluster with brokers draining over ``drain_s`` (its variant's)."""

    def __init__(self, started, settings, where, status):
        super().__init__(started, settings, where, status)
        self.drain_s = float(self.flags[-1])
        self.transport = settings.transport
        self.feed = None
        self.origin = None
        self.restarts = []
        self.proxies = []
        self.counts = None
        self.killed_at = None
        self.cpu_s = None

    async def run(self):
        """The :class:`loadtest.records.Rolling` of the run, written with its seconds and restarts."""
        settings = self.settings
        with contextlib.ExitStack() as cleanup:
            urls = self.cluster.urls
            if settings.haproxy:
                directory = cleanup.enter_context(tempfile.TemporaryDirectory(prefix="rolling-haproxy-"))
                cleanup.callback(lambda: [proxy.stop() for proxy in self.proxies])
                urls = await self._through_proxies(directory)
            spec = connections.GroupSpec(urls, self.transport, settings.source_addresses, count=settings.clients)
            groups = workers.in_workers(RollingGroup, spec, self.placement.client_procs(spec.count),
                                        self.placement.client_cpus)
            try:
                failed = await connect_all(groups)
                return await self._record(groups, failed or await self._restarts(groups))
            finally:
                for group in groups:
                    group.close()

    async def _through_proxies(self, directory):
        """Start ``--haproxy`` proxies in front of the brokers and count at the brokers: the clients' URLs."""
        loop = asyncio.get_running_loop()
        ports = [endpoints.target(url).port for url in self.cluster.urls]
        cpus = self.placement.server_cpus
        for n in range(self.settings.haproxy):
            folder = tempfile.mkdtemp(dir=directory)
            self.proxies.append(haproxy.HAProxy(ports, folder, cpu=cpus[n % len(cpus)]))
        for proxy in self.proxies:
            await loop.run_in_executor(None, proxy.wait_ready)
        self.counts = BrokerCounts(self.cluster.urls)
        prefix = endpoints.target(self.cluster.urls[0]).prefix
        return [proxy.origin + prefix for proxy in self.proxies]

    async def _restarts(self, groups):
        """From second 0: publish, restart the brokers in turn, stop, let the clients catch up; how it ended."""
        settings = self.settings
        self.status.message("%s, drain %g s: %d subscribers connected over %s" % (
            self.label, self.drain_s, settings.clients, self.transport))
        self.origin = time.monotonic()
        if self.counts is not None:
            self.counts.start(self.origin)
        await asyncio.gather(*(group.follow(self.origin, settings.backoff) for group in groups))
        cpu_before = self._cpu_seconds()
        self.feed = NumberedFeed(self.cluster.urls, self.token, settings.rate,
                                 FAILOVER_TIMEOUT_S if settings.redis == "sentinels" else 0.0)
        publishing = asyncio.ensure_future(self.feed.run(self._longest()))
        end = End.COMPLETED.text()
        try:
            await asyncio.sleep(settings.before)
            if settings.fail == "redis-primary":
                await self._kill_primary()
            restarted = self._restarted()
            for index in range(restarted):
                await self._restart(index)
                await asyncio.sleep(settings.pause if index < restarted - 1 else settings.after)
            if not restarted:
                await asyncio.sleep(settings.after)
        except LoadTestError as error:
            end = End.SERVER_GONE.text(str(error))
        finally:
            self.feed.stop()
            try:
                await publishing
            except LoadTestError as error:
                end = End.SERVER_GONE.text(str(error))
        await asyncio.gather(*(group.wait_for(self.feed.published, settings.catch_up) for group in groups))
        await asyncio.gather(*(group.settle() for group in groups))
        if cpu_before is not None and not self._restarted():
            self.cpu_s = round(self._cpu_seconds() - cpu_before, 2)
        return end

    def _cpu_seconds(self):
        """The CPU seconds of every broker so far, or None if one has exited."""
        try:
            return sum(procstat.cpu_seconds(server.pid) for server in self.cluster.servers)
        except procstat.ProcessGone:
            return None

    async def _kill_primary(self):
        """SIGKILL the Redis primary, then wait until a publish is accepted after one was refused."""
        self.killed_at = time.monotonic()
        await asyncio.get_running_loop().run_in_executor(None, lambda: self.cluster.redis.primary().kill())
        while self.feed.back_at is None or self.feed.back_at < self.killed_at:
            if time.monotonic() > self.killed_at + FAILOVER_TIMEOUT_S:
                raise LoadTestError("no publish refused then accepted within %g s of the kill" % FAILOVER_TIMEOUT_S)
            await asyncio.sleep(0.05)
        self.status.message("%s: primary killed at %.1f s, publishes refused for %.2f s" % (
            self.label, self.killed_at - self.origin, self.feed.back_at - self.feed.refused_at))

    def _longest(self):
        """The most seconds the publishing can last, every broker (or the failover) taking as long as it may."""
        settings = self.settings
        each = (DRAIN_STRETCH * self.drain_s + EXIT_GRACE_S + placement.LAUNCH_TIMEOUT_S + HEALTH_TIMEOUT_S
                + settings.pause)
        failover = FAILOVER_TIMEOUT_S if settings.fail == "redis-primary" else 0.0
        return settings.before + self._restarted() * each + failover + settings.after

    def _restarted(self):
        """How many brokers the run restarts: ``--restarts``, or every one (none with ``--fail redis-primary``)."""
        brokers = len(self.cluster.servers)
        if self.settings.fail == "redis-primary":
            return 0
        return brokers if self.settings.restarts is None else min(self.settings.restarts, brokers)

    def _now(self):
        return round(time.monotonic() - self.origin, 3)

    async def _restart(self, index):
        """Restart broker ``index`` as a deploy does; its :class:`loadtest.records.BrokerRestart`."""
        loop = asyncio.get_running_loop()
        await self.feed.leave(index)
        sigterm_s = self._now()
        code = await loop.run_in_executor(None, self.cluster.terminate, index,
                                          DRAIN_STRETCH * self.drain_s + EXIT_GRACE_S,
                                          SIGNALS[self.settings.signal])
        exited_s = self._now()
        try:
            await loop.run_in_executor(None, self.cluster.start_again, index)
        except LoadTestError as error:
            raise LoadTestError("broker %d did not start again: %s" % (index + 1, error)) from None
        listening_s = self._now()
        healthy = await server_probe.until_healthy(self.cluster.urls[index], HEALTH_TIMEOUT_S)
        record = records.BrokerRestart(
            server=self.label, drain_s=self.drain_s, broker=index + 1, sigterm_s=sigterm_s, exited_s=exited_s,
            exit_code=code, listening_s=listening_s, healthy_s=self._now() if healthy else None)
        self.restarts.append(record)
        self.out.write(record)
        if not healthy:
            raise LoadTestError("broker %d did not answer /healthz 200 within %g s" % (index + 1, HEALTH_TIMEOUT_S))
        self.feed.back(index)
        self.status.message("%s, drain %g s: broker %d exited %s after %.1f s, healthy again %.1f s later" % (
            self.label, self.drain_s, index + 1, code, exited_s - sigterm_s, record.healthy_s - exited_s))

    def _exit_code(self):
        """The exit code of a broker stopped as the run stops it: 0 after a drain, minus the signal's number if killed."""
        return -SIGNALS[self.settings.signal] if self.settings.signal != "TERM" else 0

    async def _record(self, groups, end):
        settings = self.settings
        brokers = len(self.cluster.servers)
        published = self.feed.published if self.feed is not None else 0
        if self.counts is not None:
            await self.counts.stop()
        feed, failover = self.feed, settings.fail == "redis-primary"
        target = feed.resumed + 1 if feed is not None and feed.resumed is not None else None
        since_us = None if self.killed_at is None else round(self.killed_at * 1e6)
        reports = await asyncio.gather(*(group.report(published, target, since_us) for group in groups))
        total = {key: sum(report[key] for report in reports)
                 for key in ("connected", "complete", "missing", "repeated", "duplicates", "never_back", "silent")}
        catch_up = collections.Counter(ms for report in reports for ms in report["catch_up_ms"])
        gaps = workers.summed(report["gaps"] for report in reports)
        timelines = [report["timeline"] for report in reports]
        if self.counts is None:
            rows, lateness = timeline.merge(timelines, brokers)
        else:
            rows, lateness = timeline.merge(timelines, brokers, max(self.counts.counts, default=None))
            rows = timeline.counted_by_brokers(rows, self.counts.counts)
        for row in rows:
            self.out.write(records.RollingSecond(
                server=self.label, drain_s=self.drain_s, second=row.second, connections=list(row.connections),
                new_sessions=list(row.new_sessions), delivered=row.delivered,
                delivery_ms={"p50": row.p50_ms, "p99": row.p99_ms, "max": row.max_ms}))
        healthy = [restart.healthy_s for restart in self.restarts if restart.healthy_s is not None]
        window = None
        ends = workers.summed(report["ends"] for report in reports)
        if self.restarts:
            window = rolling_verdict.restart_seconds(self.restarts[0].sigterm_s,
                                                     max(healthy) if healthy else self.restarts[-1].listening_s,
                                                     settings.backoff)
        verdict = rolling_verdict.judge(
            rows, lateness, window,
            rolling_verdict.Load(settings.clients, brokers, self.drain_s, settings.signal != "TERM"),
            rolling_verdict.Losses(total["missing"], total["repeated"], 0 if failover else sum(gaps.values()),
                                   total["silent"]),
            timeline.uncut_lateness(timelines))
        failures = list(verdict.failures)
        late = settings.clients - sum(catch_up.values())
        if failover and target is not None and target <= published and late:
            failures.append("%d clients never delivered message %d, the first published after the failover" % (
                late, target))
        if End.of(end) is not End.COMPLETED:
            failures.insert(0, end)
        if total["never_back"]:
            failures.append("%d clients never came back" % total["never_back"])
        if not self._restarted() and ends:
            failures.append("%d connections ended with no restart: %s" % (
                sum(ends.values()), ", ".join("%s: %d" % item for item in sorted(ends.items()))))
        failures.extend("broker %d exited with %s" % (restart.broker, restart.exit_code if restart.exit_code is not None
                                                      else "no code: it was stopped")
                        for restart in self.restarts if restart.exit_code != self._exit_code())
        record = records.Rolling(
            server=self.label, brokers=brokers, transport=self.transport, clients=settings.clients,
            connected=total["connected"], rate=settings.rate, drain_s=self.drain_s, backoff_s=settings.backoff,
            published=published, complete=total["complete"], lost=total["missing"],
            duplicated=total["repeated"] + total["duplicates"], resent=total["duplicates"], gaps=gaps,
            never_back=total["never_back"], reconnect_failures=workers.summed(report["failures"] for report in reports),
            first_connect_failures=workers.summed(report["first_failures"] for report in reports),
            ends=ends, restart_s=list(window) if window else None,
            peak_new_sessions=verdict.peak_new_sessions, peak_second=verdict.peak_second,
            peak_broker=None if verdict.peak_broker is None else verdict.peak_broker + 1,
            new_sessions_bound=verdict.new_sessions_bound, steady_p99_ms=verdict.steady_p99_ms,
            restart_p99_ms=verdict.restart_p99_ms, uncut_p99_ms=verdict.uncut_p99_ms,
            worst_second_p99_ms=verdict.worst_second_p99_ms,
            p99_bound_ms=verdict.p99_bound_ms, failures=failures, end=end, haproxy=len(self.proxies),
            proxy_answers=_answers(self.proxies), signal=settings.signal, fail=settings.fail, redis=settings.redis,
            silent=total["silent"], delivered=sum(row.delivered for row in rows), broker_cpu_s=self.cpu_s,
            unavailable_s=None if feed is None or feed.back_at is None else round(feed.back_at - feed.refused_at, 2),
            catch_up_ms=_percentiles(catch_up) if catch_up else None,
            publish_ms=_percentiles(collections.Counter(feed.round_trips_us), 1000.0) if feed is not None else None)
        self.out.write(record)
        return record

    @classmethod
    def backplane(cls, settings):
        """A primary, replicas and Sentinels with ``--redis sentinels``; else one redis-server."""
        return redis_sentinel.ready_group if settings.redis == "sentinels" else None

    @classmethod
    def variants(cls, settings):
        """A run for each ``--drain-seconds``, its brokers believing ``X-Forwarded-For`` behind ``--haproxy``."""
        forwarded = FORWARDED_FOR if settings.haproxy else []
        return [forwarded + list(settings.broker_flags) + ["--drain-seconds", "%g" % seconds]
                for seconds in settings.drain_seconds]

    @staticmethod
    def verdict(record):
        """The line a person reads when a rolling restart ends."""
        bound = "" if record.new_sessions_bound is None else " (at most %s)" % _round(record.new_sessions_bound)
        p99_bound = "" if record.p99_bound_ms is None else " (at most %s)" % record.p99_bound_ms
        through = "" if not record.haproxy else " through %d haproxy (answers %s)" % (
            record.haproxy, ", ".join("%s: %d" % item for item in record.proxy_answers.items()))
        if record.fail == "redis-primary":
            catch_up = record.catch_up_ms or {}
            restarts = "primary killed: publishes refused for %s s, catch-up p50 %s ms, p99 %s ms, %d silent gaps" % (
                record.unavailable_s, catch_up.get("p50", "-"), catch_up.get("p99", "-"), record.silent)
        elif record.restart_s is None:
            restarts = "no restart"
        else:
            restarts = "peak %d new sessions/s at broker %s%s; p99 %s ms during the restarts%s (of the uncut clients " \
                       "%s)" % (record.peak_new_sessions, record.peak_broker or "-", bound, record.restart_p99_ms,
                                p99_bound, record.uncut_p99_ms)
        retried = "" if not record.first_connect_failures else " (first connections tried again: %s)" % (
            console.listed(record.first_connect_failures))
        return ("%s x%d%s, %s, over %s: %d of %d clients complete%s, %d published; %d lost, "
                "%d twice (%s resent, dropped by offset), gaps %s; %s, steady p99 %s ms; %s" % (
                    record.server, record.brokers, through,
                    "SIG" + record.signal if record.killed else "drain %g s" % record.drain_s, record.transport,
                    record.complete, record.clients, retried,
                    record.published, record.lost, record.twice, record.resent, sum(record.gaps.values()) or "none",
                    restarts, record.steady_p99_ms, "; ".join(record.failures) or "passed")) + _costs(record)

    @staticmethod
    def clean(record):
        return not record.failures


def _answers(proxies):
    """``{status: answers}`` of every request the ``proxies`` logged, or None without a proxy."""
    if not proxies:
        return None
    total = collections.Counter()
    for proxy in proxies:
        total.update(proxy.statuses())
    return {str(status): total[status] for status in sorted(total)}


def _costs(record):
    """What a publish's round trip and a delivery cost, when measured: `` (publish p50 ... )`` or nothing."""
    if not record.publish_ms or not record.broker_cpu_s or not record.delivered:
        return ""
    return " (publish p50 %s ms, p99 %s ms; brokers' CPU %.1f us per delivery)" % (
        record.publish_ms["p50"], record.publish_ms["p99"], 1e6 * record.broker_cpu_s / record.delivered)


def _percentiles(counts, scale=1.0):
    """``{"p50": .., "p99": ..}`` of ``counts`` (``{value: n}``, not empty), each divided by ``scale``."""
    return {"p%d" % point: round(timeline.percentile(counts, point) / scale, 2) for point in (50, 99)}


def _round(value):
    return "%g" % round(value, 1)


def refusal(settings, brokers):
    """Why a rolling run of ``settings`` over clusters of ``brokers`` cannot run here, or None: the message
    argparse refuses it with."""
    if endpoints.RAW in settings.transport:
        return "--transport raw: the raw websocket carries no positions, and a client resumes"
    if brokers < 2:
        return "--brokers %d: a restart sends a broker's clients to another, so 2 or more" % brokers
    if settings.fail == "redis-primary" and settings.redis != "sentinels":
        return "--fail redis-primary: a failover needs --redis sentinels"
    if settings.redis == "sentinels" and redis_sentinel.REDIS_SENTINEL is None:
        return "--redis sentinels: " + redis_sentinel.HOWTO
    if settings.signal != "TERM" and settings.drain_seconds != (0.0,):
        return "--signal %s: a killed broker drains nothing, so --drain-seconds 0" % settings.signal
    return _haproxy_refusal(settings) if settings.haproxy else None


def _haproxy_refusal(settings):
    """Why ``--haproxy`` cannot carry the run's clients here, or None."""
    if not os.access(haproxy.HAPROXY, os.X_OK):
        return "--haproxy: " + haproxy.HOWTO
    try:
        haproxy.shipped_config()
    except LoadTestError as error:
        return "--haproxy: %s" % error
    most = haproxy.max_connections()
    if -(-settings.clients // settings.haproxy) > most:
        return "--haproxy %d: %d clients are more than one haproxy holds here (%d, from the open-files limit): " \
               "give more" % (settings.haproxy, settings.clients, most)
    return None


def run(parser, args):
    settings, runs = RollingSettings.of(args), arguments.broker_runs(args)
    refused = refusal(settings, runs.brokers)
    if refused is not None:
        parser.error(refused)
    runs = dataclasses.replace(runs, out=runs.out or files.default_path())
    status = console.StatusLine()
    code = placement.run_each_broker(runs, RollingRun, settings, settings.transport, status)
    try:
        rollings = summary.Results(files.read(runs.out)).rollings
    except (OSError, ValueError):
        rollings = []
    if rollings:
        status.message(summary.rolling_table(rollings))
    return code
