"""``python -m loadtest feed``: a backend publishes, a large audience listens, over a cluster of brokers.

Rules (BENCHMARKS.rst, "C100K"):

- Listeners send nothing; if any fails to connect, the run ends there.
- Each message carries its publish time (sender :data:`loadtest.framing.payload.FEED_ID`):
  one machine, one monotonic clock. A publish waits in a thread, so the listeners of
  this process are read meanwhile; one not answered in 10 s ends the run.
- After the last publish the listeners get ``LOSS_AFTER_S``; then every connection still
  open must have had every message once (``short``, ``extra``, dropped with reasons)."""

import asyncio
import time

from loadtest import arguments, records
from loadtest.client import connections, tls_context, workers
from loadtest.client.publisher import Publisher
from loadtest.client.server_probe import ServerProbe
from loadtest.contenders import placement, registry
from loadtest.framing import endpoints, payload
from loadtest.method import rules
from loadtest.method.rules import End
from loadtest.results import console

DRAIN_CHECK_S = 0.25


SUMMARY = "a backend publishes over HTTP to a large audience, over a cluster of brokers"
DESCRIPTION = ("Start a broker, or a cluster of brokers joined through Redis, connect "
        "an audience of listening websocket clients spread over them, publish through POST /publish at a "
        "steady rate, and time every delivery to every listener; count what is lost.")


def add_arguments(parser):
    arguments.option(parser, "--clients", type=arguments.positive_int, default=2000,
                     help="listening connections in all")
    arguments.option(parser, "--rate", type=arguments.positive_float, default=1.0,
                     help="messages published per second")
    arguments.option(parser, "--duration", type=arguments.positive_float, default=60.0,
                     help="seconds of publishing")
    arguments.option(parser, "--sample", type=arguments.positive_float, default=10.0,
                     help="seconds per sample")
    placement.add_broker_run_arguments(parser, registry.BROKERS, registry.CLUSTERS, brokers=2)


class FeedRun(placement.BrokerRun):
    """One feed against one cluster: connect, publish and sample, drain, sum up."""

    def __init__(self, started, args, status):
        super().__init__(started, args, status)
        self.probe = ServerProbe(self.cluster.pids())
        self.probe.cpu_shares()
        self.histogram = rules.new_histogram()
        self.received = 0

    async def run(self):
        """Returns the :class:`loadtest.records.Feed`, also written to the results file."""
        args = self.args
        spec = connections.GroupSpec(self.cluster.urls, count=args.clients, listen=True)
        groups = workers.make_groups(spec, placement.client_procs(args, args.clients), args.client_cpus)
        try:
            started = time.monotonic()
            failures = await workers.connect_groups(groups, lambda opened: self.status.progress(
                {"level": args.clients, "phase": "connecting", "opened": opened}))
            connect_s = round(time.monotonic() - started, 1)
            connected_rss = self.probe.rss_kb_each()
            if failures:
                text = ", ".join("%d %s" % (n, r) for r, n in sorted(failures.items()))
                return self._summary(End.CONNECTIONS_FAILED.text(text), connect_s, connected_rss, 0, 0.0,
                                     await _sample(groups))
            self.status.message("%s: %d listeners connected to %d brokers in %.0f s; RSS %s" % (
                self.label, args.clients, len(self.cluster.servers), connect_s, console.cluster_rss(connected_rss)))
            published, elapsed = await self._publish(groups)
            last = await self._drain(groups, published, elapsed)
            return self._summary(End.COMPLETED.text(), connect_s, connected_rss, published, elapsed, last)
        finally:
            for group in groups:
                group.close()

    async def _publish(self, groups):
        """Publish for ``--duration`` seconds, sampling as it goes; ``(published, seconds)``.

        Message ``k`` (from 0) is due ``k / rate`` seconds after the start.
        """
        args = self.args
        services = [endpoints.target(url) for url in self.cluster.urls]
        publishers = [Publisher(service.host, service.port, self.token, ssl_context=tls_context.context_for(service))
                      for service in services]
        loop = asyncio.get_event_loop()
        total = max(1, int(round(args.rate * args.duration)))
        published = sampled = 0
        await _sample(groups)  # what connecting cost is no sample's
        self.probe.cpu_shares()
        start = loop.time()
        next_sample = start + args.sample
        try:
            while published < total:
                now = loop.time()
                due = min(total, int((now - start) * args.rate) + 1)
                while published < due:
                    published += 1
                    message = payload.message(payload.FEED_ID, published, connections.now_us())
                    await loop.run_in_executor(None, publishers[published % len(publishers)].publish, [message])
                if now >= next_sample:
                    self._record(await _sample(groups), now - start, published - sampled)
                    sampled = published
                    next_sample += args.sample
                await asyncio.sleep(max(0.0, min(start + published / args.rate, next_sample) - loop.time()))
        finally:
            for publisher in publishers:
                publisher.close()
        await asyncio.sleep(max(0.0, start + args.duration - loop.time()))
        elapsed = loop.time() - start
        self._record(await _sample(groups), elapsed, published - sampled)
        return published, elapsed

    async def _drain(self, groups, published, elapsed):
        """Wait until every listener has every message or ``LOSS_AFTER_S`` passed; the last sample."""
        loop = asyncio.get_event_loop()
        deadline = loop.time() + rules.LOSS_AFTER_S
        while True:
            last = await _sample(groups, expected=published)
            self._record(last, elapsed, 0)
            if last.short == 0 or loop.time() >= deadline:
                return last
            await asyncio.sleep(DRAIN_CHECK_S)

    def _record(self, part, elapsed, published):
        """Count ``part`` in and write its sample record (a drain's empty checks are not written)."""
        self.histogram.add(part.histogram)
        self.received += part.received
        if not (part.received or published or part.drop_reasons):
            return
        cpu, seconds = self.probe.cpu_shares()
        sample = records.FeedSample(
            server=self.label, elapsed_s=round(elapsed, 1), published=published, received=part.received,
            alive=part.alive, delivery_ms=rules.rtt_summary(part.histogram), rss_kb=self.probe.rss_kb_each(),
            cpu=cpu, client_cpu=round(part.cpu_s / seconds, 4))
        self.out.write(sample)
        self.status.message(console.feed_sample_line(sample))

    def _summary(self, end, connect_s, connected_rss, published, elapsed, last):
        record = records.Feed(
            server=self.label, brokers=len(self.cluster.servers), clients=self.args.clients,
            connected=last.alive + sum(last.drop_reasons.values()), connect_s=connect_s, rate=self.args.rate,
            duration_s=round(elapsed, 1), published=published, received=self.received, short=last.short,
            extra=last.extra, dropped=sum(last.drop_reasons.values()), drop_reasons=last.drop_reasons,
            delivery_ms=rules.rtt_summary(self.histogram), connected_rss_kb=connected_rss,
            final_rss_kb=self.probe.rss_kb_each(), end=end)
        self.out.write(record)
        return record

    verdict = staticmethod(console.feed_verdict_line)

    @staticmethod
    def clean(record):
        """Whether a feed (a :class:`loadtest.records.Feed`) completed with every message once, nobody dropped."""
        return record.end == End.COMPLETED.text() and not (record.short or record.extra or record.dropped)


async def _sample(groups, expected=None):
    return rules.merge_feed(await asyncio.gather(*(group.take_sample(expected) for group in groups)))


def run(parser, args):
    return placement.run_each_broker(args, FeedRun, endpoints.WEBSOCKET, console.StatusLine())
