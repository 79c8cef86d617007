"""``python -m loadtest selftest``: how many delivered messages/s this client absorbs on one core.

A :mod:`loadtest.fanout` source, pinned to one CPU, floods N connections with
SockJS frames of K messages; the client, pinned to another CPU, counts them
exactly as in a sweep. Reported: messages/s absorbed and the client's CPU use
(near 100% means the figure is the client's limit, not the source's).
"""

import argparse
import asyncio
import os
import sys

from loadtest import client, procstat, servers


def parse_ints(text):
    return [int(part) for part in text.split(",")]


async def absorb(url, connections, seconds, warmup):
    group = client.ClientGroup(url)
    try:
        failures = await group.connect(connections)
        if failures:
            raise SystemExit("selftest: connections failed: %s" % failures)
        await asyncio.sleep(warmup)
        loop = asyncio.get_event_loop()
        received = sum(conn.received for conn in group.connections)
        cpu = os.times()
        started = loop.time()
        await asyncio.sleep(seconds)
        elapsed = loop.time() - started
        cpu_after = os.times()
        received = sum(conn.received for conn in group.connections) - received
        used = (cpu_after.user - cpu.user) + (cpu_after.system - cpu.system)
        return received / elapsed, used / elapsed, (cpu_after.user - cpu.user) / elapsed
    finally:
        group.close()


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m loadtest selftest", description=__doc__)
    parser.add_argument("--connections", type=int, default=100)
    parser.add_argument("--per-frame", type=parse_ints, default=[1, 10, 50],
                        help="messages per SockJS frame, comma-separated (default 1,10,50)")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--client-cpu", type=int, default=1)
    parser.add_argument("--source-cpu", type=int, default=0)
    args = parser.parse_args(argv)
    os.sched_setaffinity(0, {args.client_cpu})
    print("client %s on CPU %d, source on CPU %d, %d connections, %g s per figure"
          % (procstat.interpreter(), args.client_cpu, args.source_cpu, args.connections, args.seconds))
    print("%10s  %14s  %10s  %8s" % ("per frame", "delivered/s", "client cpu", "of it user"))
    for per_frame in args.per_frame:
        source = servers.launch(
            [sys.executable, "-m", "loadtest.fanout", "--port", "0", "--per-frame", str(per_frame),
             "--connections", str(args.connections)],
            cpu=args.source_cpu,
        )
        try:
            rate, cpu, user = asyncio.run(absorb(source.url, args.connections, args.seconds, 1.0))
        finally:
            source.stop()
        print("%10d  %14s  %9.0f%%  %7.0f%%" % (per_frame, "{:,.0f}".format(rate), cpu * 100, user * 100))
    return 0
