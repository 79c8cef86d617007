"""Churn: waves of sessions opened and dropped over every transport; does the server let go of them?

Rules:

- A wave opens ``size`` sessions of each kind at once: websocket, xhr-streaming, and
  xhr-polling abandoned once open (the server must expire them). After ``hold`` seconds the
  others are closed.
- Sessions are counted by ``/stats``; a server without it is given ``expiry`` seconds instead.
  Before the first wave and after the last the count must come back to ``baseline`` within
  ``SETTLE_TIMEOUT_S``, then the RSS is read. Every loop is bounded."""

import asyncio
import collections
import dataclasses

from loadtest import records
from loadtest.client import connections, http_sessions, server_probe
from loadtest.client.server_probe import ServerProbe
from loadtest.errors import ConnectError
from loadtest.method import memory_verdict

KINDS = ("websocket", "xhr_streaming", "xhr_polling")
SETTLE_TIMEOUT_S = 60.0
SETTLE_POLL_S = 0.25


@dataclasses.dataclass(frozen=True)
class Waves:
    """What a churn runs: ``waves`` of ``size`` sessions of each kind held ``hold`` s; ``expiry``: no ``/stats``."""

    waves: int = 5
    size: int = 100
    hold: float = 2.0
    expiry: float = 10.0


async def settle(url, baseline, expiry):
    """Wait for the server to let go of sessions: ``(count, settled, seconds waited)``."""
    loop = asyncio.get_event_loop()
    started = loop.time()
    if baseline is None:
        await asyncio.sleep(expiry)
        return None, None, round(loop.time() - started, 2)
    deadline = started + SETTLE_TIMEOUT_S
    while True:
        count = await server_probe.session_count(url)
        if count is not None and count <= baseline:
            return count, True, round(loop.time() - started, 2)
        if loop.time() >= deadline:
            return count, False, round(loop.time() - started, 2)
        await asyncio.sleep(SETTLE_POLL_S)


async def _open_http(url, transport, count, opened, failures, kind):
    """Open ``count`` sessions over ``transport``; each one's connection is appended to ``opened``."""
    gate = asyncio.Semaphore(connections.CONNECTING_AT_ONCE)

    async def one():
        async with gate:
            try:
                opened.append(await http_sessions.open_session(url, transport))
            except (OSError, asyncio.TimeoutError, ConnectError) as exc:
                failures["%s: %s" % (kind, connections.failure_reason(exc))] += 1

    await asyncio.gather(*(one() for _ in range(count)))


async def wave(url, pid, label, number, plan, counted):
    """Wave ``number`` of ``plan``: open, hold, drop; its ChurnWave (``counted``: the server has ``/stats``)."""
    size = plan.size
    failures = collections.Counter()
    websockets = connections.ClientGroup(connections.GroupSpec([url]))
    streams, polls = [], []
    probe = ServerProbe([pid])
    try:
        cpu_before = probe.cpu_seconds()
        websocket_failures, _, _ = await asyncio.gather(
            websockets.connect(size),
            _open_http(url, "xhr_streaming", size, streams, failures, "xhr_streaming"),
            _open_http(url, "xhr", size, polls, failures, "xhr_polling"),
        )
        for poll in polls:
            poll.close()  # abandoned: never polled again
        for reason, number in websocket_failures.items():
            failures["websocket: %s" % reason] += number
        opening_cpu_s = probe.cpu_seconds() - cpu_before
        opened = dict(zip(KINDS, (websockets.alive_count(), len(streams), len(polls))))
        await asyncio.sleep(plan.hold)
        held_connections = await server_probe.session_count(url) if counted else None
        held_rss_kb = probe.rss_kb()
    finally:
        websockets.close()
        for stream in streams:
            stream.close()
    await asyncio.sleep(0)  # let the closes reach the sockets
    sessions = sum(opened.values())
    return records.ChurnWave(server=label, wave=number, opened=opened, failed=dict(failures),
                             held_connections=held_connections, held_rss_kb=held_rss_kb,
                             connections=await server_probe.session_count(url) if counted else None, rss_kb=probe.rss_kb(),
                             open_cpu_us=round(opening_cpu_s / sessions * 1e6, 1) if sessions else None)


async def churn(url, pid, label, baseline, plan=Waves(), on_record=None):
    """Run the waves of ``plan`` against the server of ``url`` (``baseline``: None without ``/stats``): the Churn."""
    counted = baseline is not None
    await settle(url, baseline, plan.expiry)
    baseline_rss_kb = ServerProbe([pid]).rss_kb()
    for number in range(1, plan.waves + 1):
        record = await wave(url, pid, label, number, plan, counted)
        if on_record is not None:
            on_record(record)
    final_connections, settled, waited = await settle(url, baseline, plan.expiry)
    final_rss_kb = ServerProbe([pid]).rss_kb()
    record = records.Churn(
        server=label, waves=plan.waves, size=plan.size, hold_s=plan.hold, baseline_connections=baseline,
        baseline_rss_kb=baseline_rss_kb, final_connections=final_connections, final_rss_kb=final_rss_kb,
        settled=settled, settle_s=waited, growth_mb=round((final_rss_kb - baseline_rss_kb) / memory_verdict.KB_PER_MB, 2),
        verdict="sessions left" if settled is False else memory_verdict.verdict(baseline_rss_kb, final_rss_kb))
    if on_record is not None:
        on_record(record)
    return record
