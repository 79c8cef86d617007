"""``python -m loadtest feed``: a backend publishes, a large audience listens, over a cluster of brokers.

Rules (BENCHMARKS.rst, "C100K"):

- Listeners send nothing; if any fails to connect, the run ends there.
- Each message carries its publish time: one machine, one monotonic clock. A publish waits
  in a thread, so the listeners of this process are read meanwhile; one not answered in
  10 s ends the run.
- After the last publish the listeners get ``LOSS_AFTER_S``; then every connection still
  open must have had every message once (``short``, ``extra``, dropped with reasons).
- ``--publish keyed`` sends the same messages under ``?key=total``; ``counter`` adds ``1`` to
  the counter ``total`` instead: each listener receives the broker's total (untimed, counted
  by its quotes: ``COUNTED_PER_COUNTER``), and at the end every broker's ``/stats`` must give
  the number of adds (``counter_totals``).
- Each publish's round trip (``publish_ms``) and the CPU seconds of every server process
  (``cpu_s``, first publish to last sample) are measured.
- Publishing stops after ``--duration`` even with messages still due: ``published /
  duration_s`` is the rate it reached."""

import asyncio
import dataclasses
import time

from loadtest import arguments, records
from loadtest.client import connections, tls_context, workers
from loadtest.client.publisher import Publisher
from loadtest.client.server_probe import ServerProbe, server_stats
from loadtest.contenders import placement, registry
from loadtest.framing import endpoints, payload
from loadtest.method import rules
from loadtest.method.rules import End
from loadtest.results import console

DRAIN_CHECK_S = 0.25
COUNTER = "total"
QUERIES = {"plain": b"", "keyed": b"?key=" + COUNTER.encode(), "counter": b"?key=%s&op=add" % COUNTER.encode()}
COUNTED_PER_COUNTER = 4  # {"counter":"total","value":"N"} holds 8 quotes


SUMMARY = "a backend publishes over HTTP to a large audience, over a cluster of brokers"
DESCRIPTION = ("Start a broker, or a cluster of brokers joined through Redis, connect "
        "an audience of listening websocket clients spread over them, publish through POST /publish at a "
        "steady rate, and time every delivery to every listener; count what is lost.")


def add_arguments(parser):
    arguments.option(parser, "--clients", type=arguments.positive_int, default=2000,
                     help="listening connections in all")
    arguments.option(parser, "--rate", type=arguments.positive_float, default=1.0, help="messages published per second")
    arguments.option(parser, "--duration", type=arguments.positive_float, default=60.0, help="seconds of publishing")
    arguments.option(parser, "--sample", type=arguments.positive_float, default=10.0, help="seconds per sample")
    arguments.option(parser, "--publish", choices=list(QUERIES), default="plain",
                     help="plain messages, the same under ?key=%s, or adds of 1 to the counter %s" % (COUNTER, COUNTER))
    arguments.add_broker_run_arguments(parser, registry.BROKERS, registry.CLUSTERS, brokers=2)


@dataclasses.dataclass(frozen=True)
class FeedSettings:
    """A feed's load: ``clients`` listening, ``rate`` messages a second for ``duration`` seconds, a sample every
    ``sample`` seconds, each message ``publish`` (a key of :data:`QUERIES`)."""

    clients: int
    rate: float
    duration: float
    sample: float
    publish: str

    @classmethod
    def of(cls, args):
        """The settings of the command's parsed arguments."""
        return cls(args.clients, args.rate, args.duration, args.sample, args.publish)


class FeedRun(placement.BrokerRun):
    """One feed against one cluster: connect, publish and sample, drain, sum up."""

    def __init__(self, started, settings, where, status):
        super().__init__(started, settings, where, status)
        self.probe = ServerProbe(self.cluster.pids())
        self.probe.cpu_shares()
        self.histogram = rules.new_histogram()
        self.publish_histogram = rules.new_histogram()
        self.counted = COUNTED_PER_COUNTER if settings.publish == "counter" else 1
        self.received = 0
        self.cpu_s = {}

    async def run(self):
        """Returns the :class:`loadtest.records.Feed`, also written to the results file."""
        settings = self.settings
        spec = connections.GroupSpec(self.cluster.urls, count=settings.clients, listen=True)
        groups = workers.make_groups(spec, self.placement.client_procs(settings.clients), self.placement.client_cpus)
        try:
            started = time.monotonic()
            failures = await workers.connect_groups(groups, lambda opened: self.status.progress(
                {"level": settings.clients, "phase": "connecting", "opened": opened}))
            connect_s = round(time.monotonic() - started, 1)
            connected_rss = self.probe.rss_kb_each()
            if failures:
                return await self._summary(End.CONNECTIONS_FAILED.text(console.listed(failures)), connect_s,
                                           connected_rss, 0, 0.0, await _sample(groups))
            self.status.message("%s: %d listeners connected to %d brokers in %.0f s; RSS %s" % (
                self.label, settings.clients, len(self.cluster.servers), connect_s, console.cluster_rss(connected_rss)))
            published, elapsed = await self._publish(groups)
            last = await self._drain(groups, published, elapsed)
            return await self._summary(End.COMPLETED.text(), connect_s, connected_rss, published, elapsed, last)
        finally:
            for group in groups:
                group.close()

    async def _publish(self, groups):
        """Publish for ``--duration`` seconds, message ``k`` (from 0) ``k / rate`` seconds after the start,
        sampling as it goes: ``(published, seconds)``."""
        settings = self.settings
        services = [endpoints.target(url) for url in self.cluster.urls]
        publishers = [Publisher(service.host, service.port, self.token, ssl_context=tls_context.context_for(service))
                      for service in services]
        loop = asyncio.get_event_loop()
        total = max(1, int(round(settings.rate * settings.duration)))
        published = sampled = 0
        await _sample(groups)  # what connecting cost is no sample's
        self.probe.cpu_shares()
        start = loop.time()
        next_sample = start + settings.sample
        try:
            while published < total and loop.time() < start + settings.duration:
                now = loop.time()
                if published < min(total, int((now - start) * settings.rate) + 1):
                    published += 1
                    publisher = publishers[published % len(publishers)]
                    took_s = await loop.run_in_executor(None, self._publish_one, publisher, published)
                    self.publish_histogram.record_value(max(1, int(took_s * 1e6)))
                if now >= next_sample:
                    self._record(await _sample(groups), now - start, published - sampled)
                    sampled = published
                    next_sample += settings.sample
                await asyncio.sleep(max(0.0, min(start + published / settings.rate, next_sample) - loop.time()))
        finally:
            for publisher in publishers:
                publisher.close()
        await asyncio.sleep(max(0.0, start + settings.duration - loop.time()))
        elapsed = loop.time() - start
        self._record(await _sample(groups), elapsed, published - sampled)
        return published, elapsed

    def _publish_one(self, publisher, number):
        """Publish message ``number`` (``--publish``) with ``publisher``, in a thread: the seconds it took."""
        counter = self.settings.publish == "counter"
        body = b"1" if counter else payload.message(payload.FEED_ID, number, connections.now_us())
        started = time.monotonic()
        publisher.publish([body], QUERIES[self.settings.publish])
        return time.monotonic() - started

    async def _drain(self, groups, published, elapsed):
        """Wait until every listener has every message or ``LOSS_AFTER_S`` passed; the last sample."""
        loop = asyncio.get_event_loop()
        deadline = loop.time() + rules.LOSS_AFTER_S
        while True:
            last = await _sample(groups, expected=published * self.counted)
            self._record(last, elapsed, 0)
            if last.short == 0 or loop.time() >= deadline:
                return last
            await asyncio.sleep(DRAIN_CHECK_S)

    def _record(self, part, elapsed, published):
        """Count ``part`` in and write its sample record (a drain's empty checks are not written)."""
        self.histogram.add(part.histogram)
        self.received += part.received // self.counted
        if not (part.received or published or part.drop_reasons):
            return
        cpu, seconds = self.probe.cpu_shares()
        for name, share in cpu.items():
            self.cpu_s[name] = self.cpu_s.get(name, 0.0) + share * seconds
        sample = records.FeedSample(
            server=self.label, elapsed_s=round(elapsed, 1), published=published, received=part.received // self.counted,
            alive=part.alive, delivery_ms=rules.rtt_summary(part.histogram), rss_kb=self.probe.rss_kb_each(),
            cpu=cpu, client_cpu=round(part.cpu_s / seconds, 4))
        self.out.write(sample)
        self.status.message(console.feed_sample_line(sample))

    async def _summary(self, end, connect_s, connected_rss, published, elapsed, last):
        settings = self.settings
        totals = {}
        if settings.publish == "counter":
            for name, url in zip(self.cluster.pids(), self.cluster.urls):
                totals[name] = ((await server_stats(url)) or {}).get("counters", {}).get(COUNTER)
        record = records.Feed(
            server=self.label, brokers=len(self.cluster.servers), clients=settings.clients,
            connected=last.alive + sum(last.drop_reasons.values()), connect_s=connect_s, rate=settings.rate,
            duration_s=round(elapsed, 1), published=published, received=self.received,
            short=last.short // self.counted, extra=last.extra // self.counted, dropped=sum(last.drop_reasons.values()),
            drop_reasons=last.drop_reasons, delivery_ms=rules.rtt_summary(self.histogram),
            connected_rss_kb=connected_rss, final_rss_kb=self.probe.rss_kb_each(), end=end, publish=settings.publish,
            publish_ms=rules.rtt_summary(self.publish_histogram), cpu_s={n: round(s, 3) for n, s in self.cpu_s.items()},
            counter_totals=totals)
        self.out.write(record)
        return record

    verdict = staticmethod(console.feed_verdict_line)

    @staticmethod
    def clean(record):
        """Whether a feed completed with every message once, nobody dropped, every counter at the adds."""
        return record.end == End.COMPLETED.text() and not (record.short or record.extra or record.dropped) and all(
            total == str(record.published) for total in record.counter_totals.values())


async def _sample(groups, expected=None):
    return rules.merge_feed(await asyncio.gather(*(group.take_sample(expected) for group in groups)))


def run(parser, args):
    return placement.run_each_broker(arguments.broker_runs(args), FeedRun, FeedSettings.of(args), endpoints.WEBSOCKET,
                                     console.StatusLine())
