"""The sessions each broker of a cluster holds and has started, read from its ``/stats`` once a second.

Rules:

- Behind a proxy only the brokers know which of them each session reached. At the origin and
  at the end of each second from it, every broker's ``/stats`` is read at once, as a
  :class:`loadtest.method.timeline.BrokerCount` (None: no answer).
- A read that ends late skips the seconds it overran. :meth:`BrokerCounts.stop` reads once
  more: the last count is of the end of the run.
"""

import asyncio
import contextlib
import math
import time

from loadtest.client import server_probe
from loadtest.method.timeline import BEFORE, BrokerCount


class BrokerCounts:
    """The counts of the brokers of ``urls``, ``{second: [BrokerCount or None, ...]}``, once started."""

    def __init__(self, urls):
        self.urls = list(urls)
        self.counts = {}
        self.origin = None
        self._reading = None

    def start(self, origin):
        """Read at ``origin`` (now, or about) and at the end of every second from it, until :meth:`stop`."""
        self.origin = origin
        self._reading = asyncio.ensure_future(self._read_every_second(origin))

    async def stop(self):
        """Read no more each second, and once more now: the last count is of the end."""
        if self._reading is None:
            return
        self._reading.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reading
        self._reading = None
        self.counts[math.floor(time.monotonic() - self.origin)] = await self._read()

    async def _read_every_second(self, origin):
        self.counts[BEFORE] = await self._read()
        second = 0
        while True:
            await asyncio.sleep(max(0.0, origin + second + 1 - time.monotonic()))
            self.counts[second] = await self._read()
            second = max(second + 1, math.floor(time.monotonic() - origin))

    async def _read(self):
        return [_count(document) for document in await asyncio.gather(*map(server_probe.server_stats, self.urls))]


def _count(document):
    try:
        return BrokerCount(document["connections_total"], sum(document["starts"].values()), document["uptime_s"])
    except (TypeError, KeyError, AttributeError):
        return None
