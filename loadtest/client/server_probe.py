"""What the load client learns of a server under test: its processes' CPU and RSS, and its ``/stats``.

Rules:

- A :class:`ServerProbe` reads the kernel's figures of a server's processes
  (one, or a cluster's by name) and raises :class:`loadtest.errors.ServerGone`
  as soon as one of them has exited: a measurement of a dead server is void.
- ``/stats`` is the broker's; any other server has none, and the probe says
  None instead of failing. It is read with a short timeout, never in a loop
  that a slow server could stall.
- A server on loopback given no pids is found by its listening socket
  (:func:`listening_pids`): the processes of this user listening on its port.
- ``/healthz`` is the broker's readiness (200, or 503 while it drains):
  :func:`until_healthy` asks it until it says 200, up to a deadline.
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


class ServerProbe:
    """The processes ``pids`` of a server (a sequence, or a mapping of names to pids for a
    cluster): their RSS and CPU, summed or one by one."""

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
        """The processes' CPU seconds so far, summed."""
        return sum(self._read(procstat.cpu_seconds).values())

    def rss_kb(self):
        """The processes' RSS now, summed."""
        return sum(self._read(procstat.rss_kb).values())

    def rss_kb_each(self):
        """Each process's RSS now, by name."""
        return self._read(procstat.rss_kb)

    def cpu_shares(self):
        """``(shares, seconds)``: each process's CPU since the last call, as a share of one
        core, and the seconds since that call (no shares at the first call)."""
        now = time.monotonic()
        used = self._read(procstat.cpu_seconds)
        seconds = now - self._at if self._at is not None else 0.0
        shares = {name: round((used[name] - self._cpu_each[name]) / seconds, 4) for name in used if seconds > 0}
        self._cpu_each, self._at = used, now
        return shares, seconds

    def start(self):
        """Mark the start of a step (see :meth:`stop`)."""
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
    """Ask the broker of ``url`` for ``/healthz`` every ``HEALTH_POLL_S`` until it answers 200
    (True) or ``timeout`` seconds have passed (False)."""
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
    """The processes listening where ``urls`` point (``localhost``: 127.0.0.1 or ::1), sorted; empty when
    none is this user's."""
    pids = set()
    for url in urls:
        where = endpoints.target(url)
        addresses = ["127.0.0.1", "::1"] if where.host == "localhost" else [where.host]
        pids.update(procstat.listening_pids(addresses, where.port))
    return sorted(pids)


def server_runtime(url, pid):
    """What the server of ``url`` runs on, named as :func:`broker.runtime.interpreter` names
    this process's: ``interpreter`` from its ``/stats`` (the broker has it), else the name of
    process ``pid``'s executable, else None."""
    stats = stats_now(url)
    if stats is not None and isinstance(stats.get("interpreter"), str):
        return stats["interpreter"]
    return procstat.runtime_of(pid) if pid else None
