"""``python -m loadtest soak``: hold one load for minutes on each server; does its memory stay flat?

Rules (BENCHMARKS.rst, "Soak"):

- The load is the sweep's fixed step, run as back-to-back steps of ``--sample`` seconds
  (the duration rounded up), each one ``soak_sample`` record with what ``/stats`` said the
  server held. Losses are recorded and the load goes on; it ends early only when every
  connection is lost or the server dies.
- One ``soak`` record per server, also when the soak ends early or is interrupted.
- ``--churn`` adds, on the same process once the load stopped, the waves of
  :mod:`loadtest.client.churn`."""

import asyncio
import dataclasses
import math
from typing import Optional, Tuple

from broker.flags import Former
from loadtest import affinity, arguments, procstat, records, runner
from loadtest.client import churn, server_probe, sweep, tls_context
from loadtest.contenders import placement, registry
from loadtest.errors import Interrupted
from loadtest.framing import endpoints
from loadtest.method import memory_verdict
from loadtest.method.rules import End
from loadtest.results import console, files

DEFAULT_CLIENTS = 1000
DEFAULT_RATE = 20.0


SUMMARY = "one load held for minutes on each server: does its memory stay flat?"
DESCRIPTION = ("Hold one load on each server for a long time, sampling its RSS, CPU, deliveries/s, "
        "round trips and losses; judge whether its memory stays flat after the warm-up. With --churn, "
        "then waves of sessions opened and dropped over every transport.")
EPILOG = ("\"flat\": the final RSS is at most %g%% or %g MB (whichever is larger) above the RSS "
        "after the warm-up. Samples are JSON lines in the results file; python -m plots draws them."
        % (memory_verdict.FLAT_SHARE * 100, memory_verdict.FLAT_MIN_MB))


def add_arguments(parser):
    # Options that exclude each other read no variable: argparse checks only what is typed, so a
    # variable could win over the flag that excludes it.
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--servers", type=arguments.names_from("server", registry.SINGLE),
                       default=list(registry.SINGLE),
                       help="comma-separated, from %s (default: all)" % ",".join(registry.SINGLE))
    which.add_argument("--url", type=arguments.loopback_url, help="soak a server already running at this SockJS prefix (loopback only; "
                       "https: over TLS) instead of launching them; needs --server-pid")
    # These go with --url, which reads no variable: neither do they.
    parser.add_argument("--server-pid", type=int, help="with --url: the process whose RSS and CPU are sampled")
    parser.add_argument("--label", help="with --url: the server's name in the results (default: host:port)")
    parser.add_argument("--tls-ca", **dict(arguments.TLS_CA, help="with --url: " + arguments.TLS_CA["help"]))
    arguments.option(parser, "--clients", type=arguments.positive_int, default=DEFAULT_CLIENTS, help="connections")
    arguments.option(parser, "--rate", type=arguments.positive_float, default=DEFAULT_RATE,
                     help="total msgs/s sent, round-robin over the clients")
    arguments.option(parser, "--duration", type=arguments.positive_float, default=600.0,
                     help="seconds of load per server")
    arguments.option(parser, "--sample", type=arguments.positive_float, default=5.0, help="seconds per sample")
    # --warm-up until 1.0 (the broker's counted sessions); --warmup before compare and soak shared it.
    arguments.option(parser, "--warm-up-seconds", dest="warmup",
                     formerly=Former(("--warm-up", "--warmup"), "LOADTEST_WARM_UP"),
                     type=arguments.non_negative_float, default=60.0, metavar="SECONDS",
                     help="seconds before the reference RSS is taken")
    arguments.option(parser, "--churn", action="store_true",
                     help="after the load, waves of websocket, xhr-streaming and abandoned xhr-polling sessions")
    arguments.option(parser, "--churn-waves", type=arguments.positive_int, default=5, help="waves")
    arguments.option(parser, "--churn-size", type=arguments.positive_int, default=100,
                     help="sessions of each transport per wave")
    arguments.option(parser, "--churn-hold", type=arguments.non_negative_float, default=2.0,
                     help="seconds a wave's sessions are held")
    arguments.option(parser, "--expiry", type=arguments.non_negative_float, default=10.0,
                     help="seconds a server without /stats is given to expire sessions")
    arguments.add_placement_arguments(
        parser, "CPU the servers run on (default %d, the first this process may use; with --url, "
        "--server-pid is pinned there)")


def samples_for(duration, sample):
    """Whole samples covering ``duration`` seconds."""
    return max(1, int(math.ceil(duration / sample - 1e-9)))


def held_figures(stats):
    """What a server's ``/stats`` says it held (None without one; None a figure it lacks): the websockets
    ``behind``, the bytes they hold for their clients, and on PyPy the GC's heap after the last minor
    collection (``gc_used_kb``) and what was live after the last major one (``gc_live_kb``)."""
    if stats is None:
        return None
    slow = stats.get("slow_consumers") or {}
    heap = (stats.get("gc") or {}).get("heap") or {}

    def kb(value):
        return None if value is None else value // 1024

    return {"behind": slow.get("behind"), "unsent_kb": kb(slow.get("unsent_bytes")),
            "gc_used_kb": kb(heap.get("used_bytes")), "gc_live_kb": kb(heap.get("live_bytes"))}


async def watch_stats(url, every, latest, stopped):
    """Keep the server's :func:`held_figures` in ``latest[0]``, read every ``every`` seconds until
    ``stopped`` is set: an event, since before Python 3.12 ``asyncio.wait_for`` loses a
    cancellation that comes as what it waits for completes."""
    while not stopped.is_set():
        latest[:] = [held_figures(await server_probe.server_stats(url))]
        try:
            await asyncio.wait_for(stopped.wait(), every)
        except asyncio.TimeoutError:
            pass


def soak_record(server, settings, samples, end):
    """The :class:`~loadtest.records.Soak` of one server: the load, what its samples add up to, how it ended."""
    return records.Soak(
        server=server, clients=settings.clients, rate=settings.rate, sample_s=settings.sample,
        warmup_s=settings.warmup, duration_s=samples[-1].elapsed_s if samples else 0.0, samples=len(samples),
        **memory_verdict.growth([(s.elapsed_s, s.server_rss_kb) for s in samples], settings.warmup),
        lost=sum(s.lost for s in samples), dropped=sum(s.dropped for s in samples), end=end)


def verdict_line(record):
    """One line a person reads when a server's soak ends."""
    if record.rss_after_warmup_kb is None:
        figures = "no RSS after the %gs warm-up" % record.warmup_s
    else:
        figures = "RSS %.1f MB after warm-up, %.1f MB at the end (%+.1f MB, %s MB/h)" % (
            record.rss_after_warmup_kb / memory_verdict.KB_PER_MB, record.final_rss_kb / memory_verdict.KB_PER_MB,
            record.growth_mb or 0.0, "-" if record.growth_mb_per_h is None else "%+.1f" % record.growth_mb_per_h)
    return "%s: %s, %d lost, %d dropped: %s (%s)" % (
        record.server, figures, record.lost, record.dropped, record.verdict or "no verdict", record.end)


@dataclasses.dataclass(frozen=True)
class SoakSettings:
    """A soak: the ``servers`` it launches (each with ``broker_flags`` more if a broker), or the one at ``url``
    (process ``server_pid``, named ``label``, its certificates trusted from ``tls_ca``); where (the
    :class:`Placement`); ``clients`` over ``transport`` from ``source_addresses`` sending ``rate`` messages a
    second for ``duration`` seconds, a sample every ``sample``, the reference RSS after ``warmup`` seconds;
    then the churn's ``waves`` (None: no churn); the results file ``out`` (None: a new one) and the
    ``command`` its first line records."""

    servers: Tuple[str, ...]
    broker_flags: Tuple[str, ...]
    url: Optional[str]
    server_pid: Optional[int]
    label: Optional[str]
    tls_ca: Optional[str]
    placement: placement.Placement
    clients: int
    transport: str
    source_addresses: Tuple[str, ...]
    rate: float
    duration: float
    sample: float
    warmup: float
    waves: Optional[churn.Waves]
    out: Optional[str]
    command: Tuple[str, ...]

    @classmethod
    def of(cls, args):
        """The settings of the command's parsed arguments."""
        waves = churn.Waves(waves=args.churn_waves, size=args.churn_size, hold=args.churn_hold,
                            expiry=args.expiry) if args.churn else None
        return cls(tuple(args.servers), tuple(args.broker_flags.split()), args.url, args.server_pid, args.label,
                   args.tls_ca, arguments.one_cpu_each(args), args.clients, args.transport,
                   tuple(args.source_addresses or ()), args.rate, args.duration, args.sample, args.warmup, waves,
                   args.out, tuple(args.command_line))


class SoakRun:
    """One soak run: its settings, the results file, the status line."""

    def __init__(self, settings, out, status):
        self.settings = settings
        self.out = out
        self.status = status

    def server(self, label, url, pid):
        """Soak the server at ``url`` (process ``pid``): True when it carried the load to the end;
        :class:`loadtest.errors.Interrupted` on Ctrl-C, once its ``soak`` line is written."""
        settings = self.settings
        count = samples_for(settings.duration, settings.sample)
        planned = count * settings.sample
        samples, ends, baseline, held_now = [], [], [], []
        load = sweep.Options([url], levels=[settings.clients], rates=[settings.rate] * count,
                             duration=settings.sample, pause=0, transport=settings.transport, server=label,
                             server_pids=[pid], source_addresses=settings.source_addresses, stop_at_overload=False)

        def on_step(step):
            elapsed = (samples[-1].elapsed_s if samples else 0.0) + step.duration_s
            sample = records.SoakSample.of_step(step, round(elapsed, 3), held_now[0] if held_now else None)
            samples.append(sample)
            self.out.write(sample)
            self.status.soak(label, planned - elapsed, sample, fresh=True)

        def on_progress(state):
            if state["phase"] == "connecting":
                self.status.progress(state)
            elif state["phase"] == "step":
                done = (samples[-1].elapsed_s if samples else 0.0) + state["elapsed"]
                self.status.soak(label, planned - done, samples[-1] if samples else None)

        async def held():
            if settings.waves is not None:
                baseline.append(await server_probe.session_count(url))
            stopped = asyncio.Event()
            watcher = asyncio.ensure_future(watch_stats(url, settings.sample, held_now, stopped))
            try:
                await sweep.sweep(load, on_step, lambda level: ends.append(level.end), on_progress)
            finally:
                stopped.set()
                watcher.cancel()
                await asyncio.gather(watcher, return_exceptions=True)

        outcome = runner.run_interruptible(held())
        if ends:
            end = End.COMPLETED.text() if End.of(ends[0]) is End.SWEEP_DONE else ends[0]
        elif outcome.interrupted:
            end = End.INTERRUPTED.text()
        else:
            end = End.SERVER_GONE.text(str(outcome.error))
        record = soak_record(label, settings, samples, end)
        self.out.write(record)
        self.status.message(verdict_line(record))
        if outcome.interrupted:
            raise Interrupted()
        if not outcome.done:
            return False
        if settings.waves is not None and not self._churn(label, url, pid, baseline[0]):
            return False
        return End.of(end) is End.COMPLETED

    def _churn(self, label, url, pid, baseline):
        plan = self.settings.waves
        self.status.message("%s: churn, %d waves of %d sessions per transport%s" % (
            label, plan.waves, plan.size,
            "" if baseline is not None else " (no /stats: %gs for sessions to expire)" % plan.expiry))
        outcome = runner.run_interruptible(churn.churn(url, pid, label, baseline, plan, self._churn_record))
        if outcome.interrupted:
            raise Interrupted()
        if outcome.error is not None:
            self.status.message("%s: churn ended: %s" % (label, outcome.error))
            return False
        return True

    def _churn_record(self, record):
        self.out.write(record)
        if isinstance(record, records.ChurnWave):
            self.status.message("%s: wave %d: opened %s (server CPU %s us a session), failed %d; held %s connections, "
                                "RSS %.1f MB" % (
                record.server, record.wave, ", ".join("%d %s" % (record.opened[kind], kind) for kind in churn.KINDS),
                _count(record.open_cpu_us), sum(record.failed.values()), _count(record.held_connections),
                record.held_rss_kb / memory_verdict.KB_PER_MB))
        else:
            self.status.message("%s: churn over: %s connections (baseline %s) after %gs, RSS %.1f MB (%.1f MB before "
                                "the waves): %s" % (
                record.server, _count(record.final_connections), _count(record.baseline_connections), record.settle_s,
                record.final_rss_kb / memory_verdict.KB_PER_MB, record.baseline_rss_kb / memory_verdict.KB_PER_MB,
                record.verdict))


def _count(value):
    return "?" if value is None else str(value)


def check_args(parser, args):
    if args.warmup >= args.duration:
        parser.error("--warm-up-seconds (%g s) must be shorter than --duration (%g s)" % (args.warmup, args.duration))
    if args.sample > args.duration:
        parser.error("--sample (%g s) must not be longer than --duration (%g s)" % (args.sample, args.duration))
    if args.url is not None:
        if args.server_pid is None:
            parser.error("--url needs --server-pid: a soak samples the server's memory")
        try:
            procstat.rss_kb(args.server_pid)
        except procstat.ProcessGone:
            parser.error("--server-pid %d: no such process" % args.server_pid)
        if args.broker_flags:
            parser.error("--broker-flags goes with the servers soak launches, not --url")
    elif args.server_pid is not None or args.label is not None or args.tls_ca is not None:
        parser.error("--server-pid, --label and --tls-ca go with --url")


def run(parser, args):
    check_args(parser, args)
    settings = SoakSettings.of(args)
    refused = settings.placement.refusal(affinity.allowed_cpus())
    if refused is not None:
        parser.error(refused)
    status = console.StatusLine()
    # None: the server at --url.
    chosen = [None] if settings.url else placement.resolve_all(settings.servers, status,
                                                               broker_flags=settings.broker_flags)
    if not chosen:
        status.message("no server to soak")
        return 1
    where = settings.placement
    placement.prepare_client(where.client_cpus[0])
    tls_context.trust(settings.tls_ca)

    def soak(contender, out):
        run = SoakRun(settings, out, status)
        if contender is None:
            label = settings.label or endpoints.target(settings.url).netloc
            affinity.pin(settings.server_pid, where.server_cpus[0])
            runtime = server_probe.server_runtime(settings.url, settings.server_pid)
            out.write(records.Server(server=label, runtime=runtime, pid=settings.server_pid, cpu=where.server_cpus[0],
                                     tls=endpoints.target(settings.url).tls))
            return run.server(label, settings.url, settings.server_pid)
        status.message("%s (%s): %s" % (contender.label, contender.runtime, " ".join(contender.argv)))
        with placement.launched(contender, where.server_cpus, status, out=out) as running:
            if running is None:
                return 0
            server, = running.servers
            return run.server(contender.label, server.url, server.pid)

    out_path, held = placement.measure_each(settings.out, chosen, status, soak,
                                            files.run_record(settings.url, settings.transport, settings.command))
    if held is None:
        return 130
    status.message("results: %s   figures: python -m plots %s" % (out_path, out_path))
    return 0 if held == len(chosen) else 1
