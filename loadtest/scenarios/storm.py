"""``python -m loadtest storm``: every client dropped at once, back with resume; is anything missed or twice?

Rules (BENCHMARKS.rst, "Reconnect storm"): resuming subscribers
(:mod:`loadtest.client.storm_clients`) follow numbered messages published for ``--before``
seconds, are all dropped at once, come back after a delay drawn in ``[0, --backoff]``
while publishing goes on ``--after`` seconds, and get ``--catch-up`` seconds to deliver the
last. Complete: every message from the first, once, in order, no gap."""

import asyncio
import dataclasses
import statistics

from hdrh.histogram import HdrHistogram

from loadtest import arguments, records
from loadtest.client import connections, workers
from loadtest.client.numbered_feed import NumberedFeed
from loadtest.client.storm_clients import StormGroup, connect_all
from loadtest.contenders import placement, registry
from loadtest.framing import endpoints
from loadtest.method import rules
from loadtest.method.rules import End
from loadtest.results import console


SUMMARY = "every client dropped at once and back with resume: is anything missed or twice?"
DESCRIPTION = ("Start a broker, or a cluster joined through Redis, connect resuming subscribers, publish "
               "numbered messages, drop every connection at once and let each come back after a jittered "
               "delay, resuming: count the clients that end with every message once, and time how long the "
               "last takes to be live again.")


def add_arguments(parser):
    arguments.option(parser, "--clients", type=arguments.positive_int, default=1000, help="subscribers in all")
    arguments.option(parser, "--transport", **arguments.TRANSPORT)
    arguments.option(parser, "--rate", type=arguments.positive_float, default=10.0,
                     help="messages published per second")
    arguments.option(parser, "--before", type=arguments.positive_float, default=5.0,
                     help="seconds of publishing before the drop")
    arguments.option(parser, "--after", type=arguments.positive_float, default=15.0,
                     help="seconds of publishing after the drop")
    arguments.option(parser, "--backoff", type=arguments.non_negative_float, default=5.0,
                     help="each client comes back after a delay drawn in [0, this] seconds")
    arguments.option(parser, "--catch-up", type=arguments.positive_float, default=30.0,
                     help="seconds the clients get, after the last publish, to deliver it")
    arguments.add_broker_run_arguments(parser, registry.BROKERS, ["broker-cpython"])


@dataclasses.dataclass(frozen=True)
class StormSettings:
    """A storm: ``clients`` resuming over ``transport``, ``rate`` messages a second for ``before`` seconds before
    the drop and ``after`` seconds after it, each client back within ``backoff`` seconds and caught up within
    ``catch_up`` seconds of the last publish."""

    clients: int
    transport: str
    rate: float
    before: float
    after: float
    backoff: float
    catch_up: float

    @classmethod
    def of(cls, args):
        """The settings of the command's parsed arguments."""
        return cls(args.clients, args.transport, args.rate, args.before, args.after, args.backoff, args.catch_up)


class StormRun(placement.BrokerRun):
    """One storm against one server: connect, publish, drop, come back, catch up, sum up."""

    feed = None

    async def run(self):
        """The :class:`loadtest.records.Storm` of the run, also written to the results file."""
        settings = self.settings
        spec = connections.GroupSpec(self.cluster.urls, settings.transport, count=settings.clients)
        groups = workers.in_workers(StormGroup, spec, self.placement.client_procs(settings.clients),
                                    self.placement.client_cpus)
        try:
            failed = await connect_all(groups)
            if failed:
                return await self._record(groups, failed, {})
            self.status.message("%s: %d subscribers connected over %s" % (self.label, settings.clients,
                                                                         settings.transport))
            self.feed = NumberedFeed(self.cluster.urls, self.token, settings.rate)
            publishing = asyncio.ensure_future(self.feed.run(settings.before + settings.after))
            await asyncio.sleep(settings.before)
            await asyncio.gather(*(group.drop() for group in groups))
            self.status.message("%s: dropped every connection at message %d" % (self.label, self.feed.published))
            reconnect_failures = workers.summed(await asyncio.gather(*(group.come_back(settings.backoff)
                                                                for group in groups)))
            await publishing
            await asyncio.gather(*(group.wait_for(self.feed.published, settings.catch_up) for group in groups))
            return await self._record(groups, End.COMPLETED.text(), reconnect_failures)
        finally:
            for group in groups:
                group.close()

    async def _record(self, groups, end, reconnect_failures):
        published = self.feed.published if self.feed is not None else 0
        reports = await asyncio.gather(*(group.report(published) for group in groups))
        histogram = rules.new_histogram()
        caught_up = []
        for report in reports:
            histogram.add(HdrHistogram.decode(report["histogram"]))
            caught_up.extend(report["caught_up_ms"])
        gaps = workers.summed(report["gaps"] for report in reports)
        total = {key: sum(report[key] for report in reports)
                 for key in ("clients", "connected", "complete", "holes", "duplicates", "replayed", "not_caught_up")}
        record = records.Storm(
            server=self.label, brokers=len(self.cluster.servers), transport=self.settings.transport,
            clients=self.settings.clients, connected=total["connected"], rate=self.settings.rate,
            backoff_s=self.settings.backoff, published=published, complete=total["complete"],
            holes=total["holes"], duplicates=total["duplicates"], replayed=total["replayed"], gaps=gaps,
            reconnect_failures=reconnect_failures, not_caught_up=total["not_caught_up"],
            caught_up_ms=_spread(caught_up), delivery_ms=rules.rtt_summary(histogram), end=end)
        self.out.write(record)
        return record

    @staticmethod
    def verdict(record):
        """The line a person reads when a storm ends."""
        caught = record.caught_up_ms
        return ("%s x%d over %s: %d of %d clients complete after the drop (%d published); %d holes, %d twice, "
                "gaps %s; caught up p50 %s, p99 %s, last %s ms; %s" % (
                    record.server, record.brokers, record.transport, record.complete, record.clients,
                    record.published, record.holes, record.duplicates, record.gaps or "none", caught["p50"],
                    caught["p99"], caught["max"], record.end))

    @staticmethod
    def clean(record):
        """Whether every client ended with every message once."""
        return record.complete == record.clients


def _spread(values):
    """p50, p99 and max of ``values`` (milliseconds), None where there are none."""
    if not values:
        return {"p50": None, "p99": None, "max": None}
    ordered = sorted(values)
    return {"p50": round(statistics.median(ordered), 1),
            "p99": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], "max": ordered[-1]}


def run(parser, args):
    if args.transport == endpoints.RAW:
        parser.error("--transport raw: the raw websocket carries no positions, and a storm resumes")
    return placement.run_each_broker(arguments.broker_runs(args), StormRun, StormSettings.of(args), args.transport,
                                     console.StatusLine())
