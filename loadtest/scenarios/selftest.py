"""``python -m loadtest selftest``: how many delivered messages/s this client absorbs on one
core, against a :mod:`loadtest.contenders.fanout_source` source (what it does and reports: DESCRIPTION, its
``--help``)."""

import asyncio
import dataclasses
import os
import sys
from typing import Optional, Tuple

from broker.runtime import interpreter
from loadtest import affinity, arguments, procstat
from loadtest.client import connections
from loadtest.contenders import child_process
from loadtest.errors import ConnectError, LoadTestError


async def absorb(url, clients, seconds, warmup):
    """``(delivered/s, client CPU share, mean loop lag ms)`` of ``clients`` clients of the source at ``url``."""
    group = connections.ClientGroup(connections.GroupSpec([url]))
    try:
        failures = await group.connect(clients)
        if failures:
            raise ConnectError("connections failed: %s" % failures)
        await asyncio.sleep(warmup)
        loop = asyncio.get_event_loop()
        received = sum(conn.received for conn in group.connections)
        cpu = procstat.cpu_seconds(os.getpid())
        group.lag.reset()
        started = loop.time()
        await asyncio.sleep(seconds)
        elapsed = loop.time() - started
        received = sum(conn.received for conn in group.connections) - received
        used = procstat.cpu_seconds(os.getpid()) - cpu
        return received / elapsed, used / elapsed, group.lag.summary_ms()["mean"]
    finally:
        group.close()


@dataclasses.dataclass(frozen=True)
class SelftestSettings:
    """A self-test: ``connections`` of this client on ``client_cpu``, a source on ``source_cpu`` sending each
    ``per_frame`` messages a frame (one figure each), paced at ``rounds_per_s`` (None: flooding), for
    ``seconds`` a figure."""

    connections: int
    per_frame: Tuple[int, ...]
    rounds_per_s: Optional[float]
    seconds: float
    client_cpu: int
    source_cpu: int

    @classmethod
    def of(cls, args):
        """The settings of the command's parsed arguments."""
        return cls(args.connections, tuple(args.per_frame), args.rounds_per_s, args.seconds, args.client_cpu,
                   args.source_cpu)


def measure(settings, per_frame):
    """One figure: a fan-out source sending ``per_frame`` messages per frame, absorbed by this client."""
    source = child_process.launch(
        [sys.executable, "-m", "loadtest.contenders.fanout_source", "--port", "0", "--per-frame", str(per_frame),
         "--connections", str(settings.connections)]
        + (["--rounds-per-s", str(settings.rounds_per_s)] if settings.rounds_per_s else []))
    try:
        affinity.pin(source.pid, settings.source_cpu)
        return asyncio.run(absorb(source.url, settings.connections, settings.seconds, 1.0))
    finally:
        source.stop()


SUMMARY = "how many delivered messages/s this client absorbs on one core"
DESCRIPTION = ("How many delivered messages/s this client absorbs on one core. A fan-out source, pinned to one CPU, "
               "sends N connections SockJS frames of K messages (flooding, or paced in rounds like a broadcasting "
               "server); the client, pinned to another CPU, counts them exactly as in a sweep. Reported: messages/s "
               "absorbed, the client's CPU use (near 100% means the figure is the client's limit, not the source's) "
               "and their ratio, the messages/s one full core of this client absorbs.")


def add_arguments(parser):
    source_cpu, client_cpu = affinity.default_cpus()
    arguments.option(parser, "--connections", type=arguments.positive_int, default=100, help="connections")
    arguments.option(parser, "--per-frame", type=arguments.comma_list(arguments.positive_int), default="1,10,50",
                     help="messages per SockJS frame, comma-separated")
    arguments.option(parser, "--rounds-per-s", type=arguments.positive_float,
                     help="paced: one frame to every connection this often (default: flood)")
    arguments.option(parser, "--seconds", type=arguments.positive_float, default=5.0, help="seconds per figure")
    arguments.option(parser, "--client-cpu", type=int, default=client_cpu,
                     help="CPU this client runs on (default %d, the second this process may use)" % client_cpu)
    arguments.option(parser, "--source-cpu", type=int, default=source_cpu,
                     help="CPU the source runs on (default %d, the first this process may use)" % source_cpu)


def run(parser, args):
    settings = SelftestSettings.of(args)
    affinity.pin(0, settings.client_cpu)
    pace = "%g rounds/s" % settings.rounds_per_s if settings.rounds_per_s else "flood"
    print("client %s on CPU %d, source on CPU %d, %d connections, %s, %g s per figure"
          % (interpreter(), settings.client_cpu, settings.source_cpu, settings.connections, pace, settings.seconds))
    print("%10s  %14s  %10s  %14s  %12s" % ("per frame", "delivered/s", "client cpu", "per full core", "loop lag ms"))
    for per_frame in settings.per_frame:
        try:
            rate, cpu, lag_ms = measure(settings, per_frame)
        except LoadTestError as error:
            print("selftest: %s" % error, file=sys.stderr)
            return 1
        print("%10d  %14s  %9.0f%%  %14s  %12.2f" % (
            per_frame, "{:,.0f}".format(rate), cpu * 100, "{:,.0f}".format(rate / cpu), lag_ms))
    return 0
