"""What the load client learns of a server under test: its processes' CPU and RSS, and its ``/stats``.

Rules:

- A :class:`ServerProbe` reads the kernel's figures of a server's processes and raises
  :class:`loadtest.errors.ServerGone` as soon as one has exited: a measurement of a dead
  server is void.
- ``/stats`` and ``/healthz`` are the broker's: another server's None, never a failure.
  Each is read with a short timeout, never in a loop that a slow server could stall.
- A server given no pids is found by its listening socket (:func:`listening_pids`).
"""

import asyncio
import time

from loadtest import procstat
from loadtest.client import http_sessions
from loadtest.errors import ConnectError, ServerGone
from loadtest.framing import endpoints
from loadtest.method import rules

STATS_TIMEOUT_S = 2.0
HEALTH_POLL_S = 0.1
SETTLE_S = 10.0
SETTLE_SAMPLE_S = 0.5


class ServerProbe:
    """The processes ``pids`` of a server (a sequence, or ``{name: pid}``): their RSS and CPU, summed or each."""

    def __init__(self, pids):
        self.pids = dict(pids) if hasattr(pids, "items") else {str(pid): pid for pid in pids}
        self._started_cpu = None
        self._cpu_each = None
        self._at = None

    def _read(self, what):
        figures = {}
        for name, pid in self.pids.items():
            try:
                figures[name] = what(pid)
            except procstat.ProcessGone as exc:
                raise ServerGone("%s died: %s" % (name if name != str(pid) else "the server", exc)) from None
        return figures

    def check(self):
        """Raise ServerGone if a process has exited."""
        self._read(procstat.cpu_seconds)

    def cpu_seconds(self):
        return sum(self._read(procstat.cpu_seconds).values())

    def cpu_seconds_each(self):
        return self._read(procstat.cpu_seconds)

    def rss_kb(self):
        return sum(self._read(procstat.rss_kb).values())

    def rss_kb_each(self):
        return self._read(procstat.rss_kb)

    def cpu_shares(self):
        """``(shares, seconds)``: each process's CPU since the last call (a share of one core; none at the first)."""
        now = time.monotonic()
        used = self._read(procstat.cpu_seconds)
        seconds = now - self._at if self._at is not None else 0.0
        shares = {name: round((used[name] - self._cpu_each[name]) / seconds, 4) for name in used if seconds > 0}
        self._cpu_each, self._at = used, now
        return shares, seconds

    async def settled_rss_kb(self):
        """The RSS once two samples ``SETTLE_SAMPLE_S`` apart differ by 0.2 % at most, or after ``SETTLE_S``."""
        loop = asyncio.get_event_loop()
        deadline = loop.time() + SETTLE_S
        rss = self.rss_kb()
        while loop.time() < deadline:
            await asyncio.sleep(SETTLE_SAMPLE_S)
            latest = self.rss_kb()
            if abs(latest - rss) <= rss * 0.002:
                break
            rss = latest
        return self.rss_kb()

    def start(self):
        self._started_cpu = self.cpu_seconds()

    def stop(self, duration, received):
        """The :class:`loadtest.method.rules.ServerFigures` since :meth:`start`."""
        if not self.pids:
            return rules.ServerFigures()
        used = self.cpu_seconds() - self._started_cpu
        return rules.ServerFigures.of(used, duration, received, self.rss_kb())


async def server_stats(url):
    """The ``/stats`` document of the server of ``url``, or None where it has none."""
    try:
        status, document = await http_sessions.get_json(url, "/stats", STATS_TIMEOUT_S)
    except (OSError, asyncio.TimeoutError, ConnectError):
        return None
    return document if status == 200 and isinstance(document, dict) else None


def stats_now(url):
    """:func:`server_stats`, from code that runs no event loop."""
    return asyncio.run(server_stats(url))


async def health(url):
    """The status of ``GET /healthz`` on the broker of ``url``, or None if it does not answer."""
    try:
        status, _ = await http_sessions.get_json(url, "/healthz", STATS_TIMEOUT_S)
    except (OSError, asyncio.TimeoutError, ConnectError):
        return None
    return status


async def until_healthy(url, timeout):
    """Whether the broker of ``url`` answered ``/healthz`` 200 within ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        if await health(url) == 200:
            return True
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(HEALTH_POLL_S)


async def session_count(url):
    """``connections_total`` from the ``/stats`` of the server of ``url``, or None where it has none."""
    document = await server_stats(url)
    count = None if document is None else document.get("connections_total")
    return count if isinstance(count, int) else None


def listening_pids(urls):
    """The processes of this user listening where ``urls`` point (``localhost``: 127.0.0.1 or ::1), sorted."""
    pids = set()
    for url in urls:
        where = endpoints.target(url)
        addresses = ["127.0.0.1", "::1"] if where.host == "localhost" else [where.host]
        pids.update(procstat.listening_pids(addresses, where.port))
    return sorted(pids)


def server_runtime(url, pid):
    """What the server of ``url`` runs on: ``interpreter`` from its ``/stats``, else process ``pid``'s, else None."""
    stats = stats_now(url)
    if stats is not None and isinstance(stats.get("interpreter"), str):
        return stats["interpreter"]
    return procstat.runtime_of(pid) if pid else None
