"""Running the benchmark method against one server: level after level, step after step, records out.

Rules:

- One frozen :class:`Options` says what to run; its defaults are the method's.
- A level opens its connections (over ``procs`` processes), then steps through the rates
  until :func:`loadtest.method.rules.ends_sweep` (with ``stop_at_overload`` off: until no
  connection is left), or through the given rates, or to the method's cap, and says which.
- Every step record goes to ``on_step`` as soon as it is measured and every level's end
  to ``on_level``, so a run that stops keeps what it measured.
- A server that dies or stops accepting connections raises :class:`loadtest.errors.ServerGone`.
"""

import asyncio
import dataclasses
from typing import Optional, Tuple

from loadtest import records
from loadtest.client import connections, workers
from loadtest.client.server_probe import ServerProbe
from loadtest.errors import ServerGone
from loadtest.framing import endpoints
from loadtest.method import rules
from loadtest.method.rules import End
from loadtest.results import console

PROGRESS_S = 0.5


@dataclasses.dataclass(frozen=True)
class Options:
    """One sweep of the server at ``urls`` (one, or every broker of a cluster): ``rates`` of each step (None:
    the method's), ``server_pids`` whose CPU and RSS are measured, ``procs`` pinned to ``client_cpus`` in turn."""

    urls: Tuple[str, ...]
    levels: Tuple[int, ...] = rules.DEFAULT_LEVELS
    rates: Optional[Tuple[float, ...]] = None
    duration: float = 10.0
    pause: float = 2.0
    transport: str = endpoints.WEBSOCKET
    server: str = "server"
    server_pids: Tuple[int, ...] = ()
    source_addresses: Tuple[str, ...] = ()
    procs: int = 1
    client_cpus: Tuple[int, ...] = ()
    stop_at_overload: bool = True

    def __post_init__(self):
        if isinstance(self.urls, str):
            raise TypeError("urls is a sequence of SockJS prefixes, not one string: %r" % self.urls)
        for name in ("urls", "levels", "server_pids", "source_addresses", "client_cpus"):  # lists given: kept as tuples
            object.__setattr__(self, name, tuple(getattr(self, name) or ()))
        if self.rates is not None:
            object.__setattr__(self, "rates", tuple(self.rates))

    def schedule(self, level):
        return list(self.rates) if self.rates else rules.rate_schedule(level)


async def sweep(options, on_step=None, on_level=None, on_progress=None):
    """Run the sweep of ``options`` on the current loop: the Step records; ``on_progress`` gets a dict of the phase."""
    probe = ServerProbe(options.server_pids)
    steps = []

    async def run_level(groups, level):
        _progress(on_progress, level=level, phase="connecting", opened=0)
        failures = await workers.connect_groups(
            groups, lambda opened: _progress(on_progress, level=level, phase="connecting", opened=opened))
        if failures:
            summary = console.listed(failures)
            if sum(failures.values()) >= level:
                raise ServerGone("no connection to %s opened: %s%s" % (
                    ", ".join(options.urls), summary, _probe_state(probe)))
            return End.CONNECTIONS_FAILED.text(summary)
        measured = []
        for rate in options.schedule(level):
            _progress(on_progress, level=level, phase="pause", rate=rate)
            await asyncio.sleep(options.pause)
            probe.check()
            total = max(1, int(round(rate * options.duration)))
            probe.start()
            merged = rules.merge_partials(await _run_step(groups, rate, options.duration, total, on_progress, level))
            figures = probe.stop(merged.duration_s, merged.received)
            record = rules.step_record(options.server, options.transport, level, rate, merged, figures)
            steps.append(record)
            measured.append(record)
            if on_step is not None:
                on_step(record)
            if merged.end is End.ALL_LOST:
                await _check_still_accepting(options.urls, options.transport, probe)
            if (rules.ends_sweep(measured) if options.stop_at_overload
                    else record.overloaded and not any(g.alive_count() for g in groups)):
                return rules.level_end(record)
        return End.SWEEP_DONE.text() if options.rates else rules.cap_end(level, rate)

    for level in options.levels:
        spec = connections.GroupSpec(options.urls, options.transport, options.source_addresses, count=level)
        groups = workers.make_groups(spec, options.procs, options.client_cpus)
        try:
            end = await run_level(groups, level)
        finally:
            for group in groups:
                group.close()
        if on_level is not None:
            on_level(records.Level(server=options.server, transport=options.transport, level=level, end=end))
    return steps


async def _check_still_accepting(urls, transport, probe):
    """After every connection dropped: raise :class:`ServerGone` unless a new one opens."""
    probe.check()
    group = connections.ClientGroup(connections.GroupSpec(urls[:1], transport))
    try:
        failures = await group.connect(1)
    finally:
        group.close()
    if failures:
        raise ServerGone("every connection was lost and a new one fails: %s" % ", ".join(failures))


def _probe_state(probe):
    try:
        probe.check()
    except ServerGone as exc:
        return " (%s)" % exc
    return ""


def _progress(on_progress, **state):
    if on_progress is not None:
        on_progress(state)


async def _run_step(groups, rate, duration, total, on_progress, level):
    counts = rules.split(total, [group.alive_count() for group in groups])
    loop = asyncio.get_event_loop()
    started = loop.time()

    async def tick():
        while True:
            _progress(on_progress, level=level, phase="step", rate=rate,
                      elapsed=loop.time() - started, duration=duration)
            await asyncio.sleep(PROGRESS_S)

    await asyncio.gather(*(group.begin_step() for group in groups))
    ticker = asyncio.ensure_future(tick())
    try:
        return await asyncio.gather(*(group.run_step(count, duration, total) for group, count in zip(groups, counts)))
    finally:
        ticker.cancel()


def run_sweep(options, on_step=None, on_level=None, on_progress=None):
    """:func:`sweep` as one synchronous call, on a loop of its own."""
    return asyncio.run(sweep(options, on_step, on_level, on_progress))
