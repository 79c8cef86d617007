"""``python -m loadtest compare``: measure every contender in one run, into one results file.

What it runs and its options: docs/load-testing.rst, "Comparing servers". Rules:

- Each contender in turn, pinned to the server CPU: over each transport (or the ``--mix``),
  the sweep then the fixed loads on one server process; then, on a fresh process each,
  its RSS per idle connection over each. Last, the bare send loop (``floor``).
- A failure skips the rest of its contender's measurements (over several transports, only
  those of its own transport); a contender that cannot run here is skipped with the reason.
- ``--tls``: brokers only, on a certificate made for the run that the client alone
  trusts, labelled ``<name>+tls``; the floor stays plain."""

import argparse
import contextlib
import dataclasses
import json
import subprocess
from typing import Optional, Tuple

from broker.flags import Former
from loadtest import affinity, arguments, records, runner
from loadtest.client import connections, sweep, tls_context, workers
from loadtest.client.server_probe import ServerProbe
from loadtest.contenders import certificate, placement, registry
from loadtest.errors import Interrupted, ServerGone
from loadtest.framing import endpoints
from loadtest.results import console, files, summary

LEVELS = (25, 100, 500, 1000, 5000, 10000)
DEFAULT_LOADS = ((1000, 100.0), (10000, 10.0), (19000, 5.0))
MEASURES = ("sweep", "cpu", "idle")
# --tls: plain only, over TLS only, or each server plain then over TLS.
TLS_MODES = ("off", "on", "both")


def parse_load(text):
    """``1000x100``: clients x total messages/s."""
    try:
        clients, rate = text.lower().split("x")
        load = int(clients), float(rate)
    except ValueError:
        raise argparse.ArgumentTypeError("expected CLIENTSxRATE, e.g. 1000x100, got %r" % text)
    if load[0] < 1 or load[1] <= 0:
        raise argparse.ArgumentTypeError("clients and rate must be positive, got %r" % text)
    return load


parse_servers = arguments.names_from("server", registry.NAMES)
parse_measures = arguments.names_from("measurement", MEASURES)


SUMMARY = "every contender measured in one run: sweep, CPU per delivery, RSS per idle connection"
DESCRIPTION = ("Launch each contender pinned to one CPU, sweep it from the other, measure its CPU "
        "per delivered message and RSS per idle connection, and the bare send loop floor.")


def add_arguments(parser):
    arguments.option(parser, "--servers", type=parse_servers, default=list(registry.SINGLE),
                     help="comma-separated, from %s (default: %s)" % (
                         ",".join(registry.NAMES), ",".join(registry.SINGLE)))
    arguments.option(parser, "--brokers", type=arguments.positive_int, default=2,
                     help="brokers of each cluster-* contender")
    arguments.option(parser, "--levels", type=arguments.comma_list(arguments.positive_int), default=list(LEVELS),
                     help="concurrency levels (default %s)" % ",".join(map(str, LEVELS)))
    arguments.option(parser, "--rates", type=arguments.comma_list(arguments.positive_float),
                     help="total msgs/s of each step (default: rising until the server or the "
                     "client is overloaded; see python -m loadtest --help)")
    arguments.option(parser, "--step-seconds", type=arguments.positive_float, default=sweep.Options.duration,
                     help="seconds per step")
    arguments.option(parser, "--pause", type=arguments.non_negative_float, default=sweep.Options.pause,
                     help="seconds of quiet before each step")
    arguments.option(parser, "--cpu-load", type=arguments.comma_list(parse_load), default=list(DEFAULT_LOADS),
                     metavar="CLIENTSxRATE[,...]",
                     help="fixed loads for CPU per delivered message and round trips; the floor runs "
                     "the first (default %s)" % ",".join("%dx%g" % load for load in DEFAULT_LOADS))
    arguments.option(parser, "--cpu-seconds", type=arguments.positive_float, default=10.0,
                     help="how long each fixed load and the floor run (default 10)")
    # --warm-up until 1.0, when the broker's --warm-up counted sessions.
    arguments.option(parser, "--warm-up-seconds", dest="warm_up", formerly=Former(("--warm-up",), "LOADTEST_WARM_UP"),
                     type=arguments.non_negative_float, default=0.0, metavar="SECONDS",
                     help="before the fixed loads, run the first of them this long, unrecorded, so "
                     "that they measure a warm server (PyPy's JIT needs thousands of messages on "
                     "rare paths); a sweep before them warms it too (default 0)")
    arguments.option(parser, "--idle-connections", type=arguments.positive_int, default=19000,
                     help="connections held open for RSS per idle connection (default 19000)")
    arguments.option(parser, "--procs", type=arguments.positive_int,
                     help="client processes for each sweep level, fixed load and the idle "
                     "connections (default: one per %d connections)" % placement.CONNECTIONS_PER_PROC)
    arguments.option(parser, "--measure", type=parse_measures, default=list(MEASURES),
                     help="comma-separated, from %s (default: all; the floor comes with cpu)"
                     % ",".join(MEASURES))
    arguments.option(parser, "--tls", nargs="?", const="on", choices=TLS_MODES, default="off",
                     help="serve the brokers over TLS with a certificate for 127.0.0.1 made for the run (needs "
                     "the openssl command), trusted by the load client alone; each is labelled NAME+tls. "
                     "--tls alone: over TLS only (the servers that are not brokers serve no TLS and are "
                     "skipped); --tls both: each server plain, then each broker over TLS")
    arguments.add_placement_arguments(parser, "CPU the servers run on (default %d, the first this process may use)",
                                      transport=arguments.TRANSPORT_LIST)
    arguments.option(parser, "--mix", **dict(arguments.MIX, help="in place of --transport, one audience of "
                                              "several: " + arguments.MIX["help"]))


@dataclasses.dataclass(frozen=True)
class CompareSettings:
    """What a comparison measures (:data:`MEASURES`) of which ``servers`` (``brokers`` in each cluster, each
    broker with ``broker_flags`` more, ``tls``: a mode of :data:`TLS_MODES`), where (the :class:`Placement`),
    over which ``transports`` (one may be a mix) from which ``source_addresses``: the sweep's ``levels``,
    ``rates`` (None: rising), ``step_seconds`` and ``pause``; the fixed loads ``cpu_load`` ((clients, rate)
    each) for ``cpu_seconds`` after ``warm_up`` seconds; ``idle_connections``; the results file ``out``
    (None: a new one) and the ``command`` its first line records."""

    servers: Tuple[str, ...]
    brokers: int
    broker_flags: Tuple[str, ...]
    tls: str
    measure: Tuple[str, ...]
    placement: placement.Placement
    transports: Tuple[str, ...]
    source_addresses: Tuple[str, ...]
    levels: Tuple[int, ...]
    rates: Optional[Tuple[float, ...]]
    step_seconds: float
    pause: float
    cpu_load: Tuple[Tuple[int, float], ...]
    cpu_seconds: float
    warm_up: float
    idle_connections: int
    out: Optional[str]
    command: Tuple[str, ...]

    @classmethod
    def of(cls, args):
        """The settings of the command's parsed arguments: ``--mix`` in place of the transports if given."""
        return cls(tuple(args.servers), args.brokers, tuple(args.broker_flags.split()), args.tls, tuple(args.measure),
                   arguments.one_cpu_each(args, args.procs), (args.mix,) if args.mix else tuple(args.transport),
                   tuple(args.source_addresses or ()), tuple(args.levels),
                   None if args.rates is None else tuple(args.rates), args.step_seconds, args.pause,
                   tuple(args.cpu_load), args.cpu_seconds, args.warm_up, args.idle_connections, args.out,
                   tuple(args.command_line))


@dataclasses.dataclass
class Compare:
    """One comparison run: its settings, the results file, the status line."""

    settings: CompareSettings
    out: files.ResultsFile
    status: console.StatusLine

    def measure(self, contender):
        """The chosen measurements of one contender; False if one failed along the way."""
        measures = self.settings.measure
        under_load = "sweep" in measures or "cpu" in measures
        transports = self._under_load(contender) if under_load else self.settings.transports
        idle = "idle" not in measures or all([self._idle(contender, transport, not under_load)
                                               for transport in transports])
        return tuple(transports) == self.settings.transports and idle

    def _who(self, contender, transport):
        """How the messages name a contender: its label, and the transport when the run has several."""
        return contender.label if len(self.settings.transports) == 1 else "%s over %s" % (contender.label, transport)

    def _under_load(self, contender):
        """Over each transport in turn, the sweep, then the fixed loads, on one process: those measured in full."""
        settings = self.settings
        where = settings.placement
        with placement.launched(contender, where.server_cpus, self.status, settings.brokers, out=self.out) as running:
            if running is None:
                return []
            options = sweep.Options(running.urls, levels=settings.levels, rates=settings.rates,
                                    duration=settings.step_seconds, pause=settings.pause,
                                    transport=settings.transports[0], server=contender.label,
                                    server_pids=running.pids().values(), source_addresses=settings.source_addresses,
                                    procs=where.client_procs(max(settings.levels)), client_cpus=where.client_cpus)
            return [transport for transport in settings.transports
                    if self._over(contender, dataclasses.replace(options, transport=transport))]

    def _over(self, contender, options):
        """The sweep and the fixed loads chosen over ``options.transport``; False if one failed."""
        if "sweep" in self.settings.measure and self._run(
                sweep.sweep(options, self._step, self._level, self.status.progress), options.transport) is None:
            return False
        return "cpu" not in self.settings.measure or self._fixed_loads(contender, options)

    def _fixed_loads(self, contender, options):
        """CPU per delivered message at each fixed load, after the warm-up; False if one was not measured."""
        settings, transport = self.settings, options.transport
        who = self._who(contender, transport)
        if settings.warm_up and not self._warm_up(who, options):
            return False
        measured = True
        for clients, rate in settings.cpu_load:
            ends = []
            fixed = self._run(sweep.sweep(self._fixed_load(options, clients, rate, settings.cpu_seconds),
                                          on_level=ends.append, on_progress=self.status.progress), transport)
            if fixed is None:
                return False
            if not fixed:
                self.status.message("%s: no CPU per delivered message at %dx%g: %s" % (
                    who, clients, rate, ends[-1].end))
                measured = False
                continue
            self.out.write(records.CpuPerMsg.of_step(fixed[0], transport, endpoints.target(options.urls[0]).tls))
            self.status.message("%s: %s us of server CPU per delivered message at %dx%g, p99 %s ms" % (
                who, fixed[0].server_cpu_us_per_msg, clients, rate, fixed[0].rtt_ms.get("p99")))
        return measured

    def _fixed_load(self, options, clients, rate, seconds):
        return dataclasses.replace(options, levels=[clients], rates=[rate], duration=seconds,
                                   procs=self.settings.placement.client_procs(clients))

    def _warm_up(self, who, options):
        """The first fixed load for ``--warm-up-seconds``, not recorded; False if it failed (said why)."""
        clients, rate = self.settings.cpu_load[0]
        warm = self._run(sweep.sweep(self._fixed_load(options, clients, rate, self.settings.warm_up),
                                     on_progress=self.status.progress), options.transport)
        if warm is None:
            return False
        self.status.message("%s: warmed up at %dx%g for %g s (%s messages delivered), not recorded" % (
            who, clients, rate, self.settings.warm_up, sum(step.received for step in warm)))
        return True

    def _idle(self, contender, transport, record_server):
        """RSS per idle connection over ``transport``, on fresh server processes."""
        settings = self.settings
        where = settings.placement
        with placement.launched(contender, where.server_cpus, self.status, settings.brokers,
                                out=self.out if record_server else None) as running:
            if running is None:
                return False
            spec = connections.GroupSpec(running.urls, transport, settings.source_addresses,
                                         count=settings.idle_connections)
            record = self._run(idle_rss(running, contender.label, spec, where.client_procs(spec.count),
                                        where.client_cpus[0]), transport)
            if record is None:
                return False
            self.out.write(record)
            self.status.message("%s: %s KiB per idle connection (%d connections)" % (
                self._who(contender, transport), record.rss_per_conn_kb, record.connections))
            return True

    def floor(self):
        """Run the bare send loop under the first fixed load, pinned like the servers."""
        settings = self.settings
        clients, rate = settings.cpu_load[0]
        try:
            python, _ = registry.cpython("loadtest.command_line")
        except registry.Unavailable as reason:
            self.status.message("floor: left out: %s" % reason)
            return
        argv = [python, "-m", "loadtest", "floor", "--connections", str(clients),
                "--rate", str(clients * rate), "--seconds", str(settings.cpu_seconds),
                "--cpu", str(settings.placement.server_cpus[0]), "--drain-cpu", str(settings.placement.client_cpus[0])]
        if settings.source_addresses:
            argv += ["--source-addresses", ",".join(settings.source_addresses)]
        self.status.message("floor: bare send loop, %d connections, %g sends/s" % (clients, clients * rate))
        try:
            done = subprocess.run(argv, cwd=registry.REPO_ROOT, capture_output=True, text=True,
                                  timeout=settings.cpu_seconds + 60)
        except subprocess.TimeoutExpired:
            self.status.message("floor: no result within %.0f s, left out" % (settings.cpu_seconds + 60))
            return
        if done.returncode != 0:
            self.status.message("floor: failed, left out: %s" % (done.stderr or done.stdout).strip())
            return
        record = records.parse(json.loads(done.stdout.strip().splitlines()[-1]))
        self.out.write(record)
        self.status.message("floor: %s us of CPU per send" % record.cpu_us_per_send)

    def _run(self, coroutine, transport=None):
        """The value of one measurement, or None (said why) when it failed; Ctrl-C raises Interrupted."""
        outcome = runner.run_interruptible(coroutine)
        if outcome.interrupted:
            raise Interrupted()
        if outcome.error is not None:
            over = " over %s" % transport if transport is not None and len(self.settings.transports) > 1 else ""
            self.status.message("%s, its remaining measurements%s skipped: %s" % (
                "server gone" if isinstance(outcome.error, ServerGone) else "measurement failed", over,
                outcome.error))
            return None
        return outcome.value

    def _step(self, record):
        self.out.write(record)
        self.status.step(record)

    def _level(self, record):
        self.out.write(record)
        self.status.message("%s over %s, %d clients: %s" % (record.server, record.transport, record.level, record.end))


async def idle_rss(running, label, spec, procs=1, client_cpu=None):
    """Hold the connections of ``spec`` to ``running`` idle until its RSS settles: the IdleRss."""
    probe = ServerProbe(list(running.pids().values()))
    before = probe.rss_kb()
    groups = workers.make_groups(spec, procs, [client_cpu] if client_cpu is not None else ())
    try:
        failures = await workers.connect_groups(groups)
        opened = sum(group.alive_count() for group in groups)
        if not opened:
            raise ServerGone("no idle connection opened to %s: %s" % (", ".join(running.urls), failures))
        rss = await probe.settled_rss_kb()
    finally:
        for group in groups:
            group.close()
    return records.IdleRss(server=label, transport=spec.transport, connections=opened, rss_kb=rss, rss_before_kb=before,
                           rss_per_conn_kb=round((rss - before) / opened, 2), failed=sum(failures.values()),
                           tls=endpoints.target(running.urls[0]).tls)


def run(parser, args):
    settings = CompareSettings.of(args)
    refused = settings.placement.refusal(affinity.allowed_cpus())
    if refused is not None:
        parser.error(refused)
    status = console.StatusLine()
    with contextlib.ExitStack() as made:
        if settings.tls == "off":
            certificates = [None]
        else:
            try:
                served = made.enter_context(certificate.temporary())
            except certificate.CertificateError as error:
                status.message("--tls: %s" % error)
                return 1
            made.callback(tls_context.trust, tls_context.trusted())  # trust no more once it is removed
            tls_context.trust(served.certfile)
            certificates = [served] if settings.tls == "on" else [None, served]
        return _compare(settings, status, placement.resolve_all(settings.servers, status, certificates,
                                                                settings.broker_flags))


def _compare(settings, status, chosen):
    """Measure the contenders ``chosen``, write the results, print the summary: the exit status."""
    if not chosen:
        status.message("no server to measure")
        return 1
    placement.prepare_client(settings.placement.client_cpus[0])

    def measure(contender, out):
        status.message("%s (%s): %s" % (contender.label, contender.runtime, " ".join(contender.argv)))
        return Compare(settings, out, status).measure(contender)

    def floor(out):
        if "cpu" in settings.measure:
            Compare(settings, out, status).floor()

    out_path, measured = placement.measure_each(settings.out, chosen, status, measure, files.run_record(
        None, ",".join(settings.transports), settings.command), last=floor)
    if measured is None:
        return 130
    print(summary.summary_rst(summary.Results(files.read(out_path))))
    status.message("results: %s   figures: python -m plots %s" % (out_path, out_path))
    return 0 if measured == len(chosen) else 1
