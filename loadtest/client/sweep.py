"""Running the benchmark method against one server: level after level, step after step, records out.

Rules:

- One frozen :class:`Options` says what to run; its defaults are the method's
  (``python -m loadtest``, ``compare`` and ``soak`` only set what they change).
- A level opens its connections (over ``procs`` processes), then steps through
  the rates; it ends at the first overloaded step, or where the client, not the
  server, was saturated (client-bound, :func:`loadtest.method.rules.ends_sweep`), unless
  ``stop_at_overload`` is off, in which case it goes on with the connections
  left until none is. Without given rates it goes on until then, or to the
  method's cap, and says so. The rules deciding it are :mod:`loadtest.method.rules`'s.
- Every step record goes to ``on_step`` as soon as it is measured and every
  level's end to ``on_level``, so a run that stops keeps what it measured.
- A server that dies or stops accepting connections raises
  :class:`loadtest.errors.ServerGone`.

:func:`sweep` runs on the caller's event loop (the commands drive it through
:func:`loadtest.runner.run_interruptible`, so Ctrl-C stops it cleanly);
:func:`run_sweep` is the same as one synchronous call.
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

PROGRESS_S = 0.5


@dataclasses.dataclass(frozen=True)
class Options:
    """One sweep of the server at ``urls`` (SockJS prefixes: one, or every broker of a cluster).

    ``rates``: the total msgs/s of each step (None: :func:`loadtest.method.rules.rate_schedule` of each level);
    ``duration`` and ``pause``: seconds per step and of quiet before it;
    ``transport``: one of :data:`loadtest.framing.endpoints.TRANSPORTS`, or a mix of them
    (:func:`loadtest.framing.endpoints.mix`); ``server``: its label in the records;
    ``server_pids``: its processes, whose CPU and RSS are measured (summed); ``source_addresses``: local
    addresses to spread connections over; ``procs``: client processes, pinned to
    ``client_cpus`` in turn; ``stop_at_overload``: end a level at its first overloaded (or client-bound) step.
    """

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
        for name in ("urls", "levels", "rates", "server_pids", "source_addresses", "client_cpus"):  # lists given: kept as tuples
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, tuple(value))

    def schedule(self, level):
        """The rates of the steps of ``level``."""
        return list(self.rates) if self.rates else rules.rate_schedule(level)


async def sweep(options, on_step=None, on_level=None, on_progress=None):
    """Run the sweep of ``options`` on the current loop; returns the :class:`loadtest.records.Step` list.

    ``on_step(step)`` and ``on_level(level)`` get each record as it is made;
    ``on_progress(state)`` a dict (``level``, ``phase`` and what the phase has).
    """
    probe = ServerProbe(options.server_pids)
    steps = []

    async def run_level(groups, level):
        """Connect, then step through the schedule; returns the level's ``end`` text."""
        _progress(on_progress, level=level, phase="connecting", opened=0)
        failures = await workers.connect_groups(
            groups, lambda opened: _progress(on_progress, level=level, phase="connecting", opened=opened))
        if failures:
            summary = ", ".join("%d %s" % (n, r) for r, n in sorted(failures.items()))
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
        return await asyncio.gather(
            *(group.run_step(count, duration, total) for group, count in zip(groups, counts))
        )
    finally:
        ticker.cancel()


def run_sweep(options, on_step=None, on_level=None, on_progress=None):
    """:func:`sweep` as one synchronous call, on a loop of its own; returns the step records.

    Raises :class:`ServerGone` when the server dies; the steps measured until then
    have already been passed to ``on_step``.
    """
    return asyncio.run(sweep(options, on_step, on_level, on_progress))
