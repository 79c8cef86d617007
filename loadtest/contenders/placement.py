"""Where a benchmark runs: the server's and the client's CPUs, the contenders that can run here, launching them.

The options the commands that start servers share, and what they do with them: check the
CPUs, pin the load client, launch each contender on its CPU and record it (:func:`launched`),
measure each in turn into one results file (:func:`measure_each`). One client process holds
at most ``CONNECTIONS_PER_PROC`` connections. A scenario against brokers it starts is a
:class:`BrokerRun` that :func:`run_each_broker` runs, its options :func:`add_broker_run_arguments`."""

import contextlib
import secrets
from typing import NamedTuple, Tuple

from broker.runtime import raise_open_files_limit
from loadtest import affinity, arguments, records, runner
from loadtest.contenders import child_process, registry, server_group
from loadtest.errors import Interrupted
from loadtest.framing import endpoints
from loadtest.results import files

CONNECTIONS_PER_PROC = 10000
# A broker's --warm-up may take up to 60 s before it listens.
LAUNCH_TIMEOUT_S = 90.0


def add_placement_arguments(parser, server_cpu_help, transport=arguments.TRANSPORT):
    """The options ``compare`` and ``soak`` share: CPUs, ``--transport``, results, the brokers' flags."""
    server_cpu, client_cpu = affinity.default_cpus()
    group = parser.add_argument_group("placement")
    arguments.option(group, "--server-cpu", type=int, default=server_cpu, help=server_cpu_help % server_cpu)
    arguments.option(group, "--client-cpu", type=int, default=client_cpu,
                     help="CPU the load client runs on (default %d, the second this process may use)" % client_cpu)
    arguments.option(group, "--transport", **transport)
    arguments.option(group, "--source-addresses", type=arguments.parse_source_addresses,
                     help="local addresses to spread connections over, e.g. 127.0.0.2-127.0.0.9")
    arguments.option(group, "--out", help="results file (default results/<timestamp>.jsonl)")
    arguments.option(group, "--broker-flags", type=arguments.broker_flags, default="",
                     help="more flags for every broker launched, one string (e.g. \"--warm-up 3000\"); the "
                     "other servers run as they are")


def client_procs(args, connections):
    """``--procs``, or one client process per CONNECTIONS_PER_PROC of ``connections``."""
    return args.procs or -(-connections // CONNECTIONS_PER_PROC)


@contextlib.contextmanager
def launched(contender, cpus, status, brokers=1, flags=(), out=None):
    """Start ``contender`` on ``cpus`` (``brokers`` processes if joined), write its
    :class:`~loadtest.records.Server` to ``out`` if given, stop it on leaving: the running cluster,
    or None if it did not start (said why)."""
    try:
        running = server_group.launch(contender, brokers if contender.joined else 1, cpus, flags,
                                      timeout=LAUNCH_TIMEOUT_S)
    except (child_process.ServerError, OSError) as error:
        status.message("%s: did not start, skipped: %s" % (contender.label, error))
        running = None
    if running is None:
        yield None
        return
    try:
        if out is not None:
            out.write(server_record(contender, running, cpus[0]))
        yield running
    finally:
        running.stop()


def measure_each(args, chosen, status, measure, run_line, last=None):
    """Measure each contender of ``chosen`` into one results file after its ``run_line``, then ``last(out)``:
    ``(path, the runs that went through in full)`` (``measure(contender, out)`` counts them), or
    ``(path, None)`` when Ctrl-C ended it."""
    out_path = args.out or files.default_path()
    done = 0
    with files.ResultsFile(out_path) as out:
        out.write(run_line)
        try:
            for contender in chosen:
                done += measure(contender, out)
            if last is not None:
                last(out)
        except Interrupted:
            status.message("interrupted: what was measured is in %s" % out_path)
            return out_path, None
    return out_path, done


def server_record(contender, running, cpu):
    """The :class:`~loadtest.records.Server` of a launched contender (no pid for a cluster of several processes)."""
    pids = list(running.pids().values())
    return records.Server(server=contender.label, runtime=contender.runtime, pid=pids[0] if len(pids) == 1 else None,
                          cpu=cpu, tls=endpoints.target(running.urls[0]).tls)


def resolve_all(names, status, certificates=(None,), broker_flags=()):
    """The contenders of ``names`` that can run here (others said once), for each of ``certificates`` (None: plain)."""
    chosen, reported = [], set()
    flags = registry.BROKER_FLAGS + list(broker_flags)
    for name in names:
        for certificate in certificates:
            try:
                chosen.append(registry.resolve(name, broker_flags=flags, certificate=certificate))
            except registry.Unavailable as reason:
                if str(reason) not in reported:
                    reported.add(str(reason))
                    status.message("skipped %s" % reason)
    return chosen


def prepare_client(cpu):
    """Pin this process (the load client) to ``cpu`` and let it open as many files as it may."""
    affinity.pin(0, cpu)
    raise_open_files_limit()


def check_cpus(parser, args):
    available = affinity.allowed_cpus()
    for option, cpu in (("--server-cpu", args.server_cpu), ("--client-cpu", args.client_cpu)):
        if cpu not in available:
            parser.error("%s %d: this process may run on CPUs %s only" % (
                option, cpu, ",".join(map(str, sorted(available)))))
    if args.server_cpu == args.client_cpu:
        parser.error("--server-cpu and --client-cpu must differ")


def add_broker_run_arguments(parser, servers, default, brokers=3):
    """The options of :func:`run_each_broker`: ``--servers``, ``--brokers``, the CPUs, ``--out``."""
    arguments.option(parser, "--servers", type=arguments.names_from("server", servers), default=list(default),
                     help="comma-separated, from %s (default: %s)" % (",".join(servers), ",".join(default)))
    arguments.option(parser, "--brokers", type=arguments.positive_int, default=brokers,
                     help="broker processes of each cluster-* server")
    arguments.option(parser, "--procs", type=arguments.positive_int,
                     help="client processes (default: one per %d connections)" % CONNECTIONS_PER_PROC)
    server_cpu, client_cpu = affinity.default_cpus()
    arguments.option(parser, "--server-cpus", type=arguments.comma_list(int), default=[server_cpu],
                     help="CPUs the brokers run on, broker i on the i-th in turn (default %d, the first "
                     "this process may use)" % server_cpu)
    arguments.option(parser, "--client-cpus", type=arguments.comma_list(int), default=[client_cpu],
                     help="CPUs the client processes run on, in turn (default %d, the second this "
                     "process may use)" % client_cpu)
    arguments.option(parser, "--out", help="results file (default results/<timestamp>.jsonl)")


class Started(NamedTuple):
    """A server started for one run: ``label``, ``cluster``, publish ``token``, the variant's ``flags``, ``out``."""

    label: str
    cluster: server_group.Cluster
    token: str
    flags: Tuple[str, ...]
    out: files.ResultsFile


class BrokerRun:
    """One run of a scenario against one server :func:`run_each_broker` started (its :class:`Started`,
    the command's ``args``, ``status``). A subclass has ``run()``, the coroutine that writes its records
    and returns its summary, and the static ``verdict(summary)`` (the line a person reads) and
    ``clean(summary)`` (whether the run passed)."""

    def __init__(self, started, args, status):
        self.label, self.cluster, self.token, self.flags, self.out = started
        self.args = args
        self.status = status

    @classmethod
    def variants(cls, args):
        """The flag lists the servers run with, one run each: by default one, with none."""
        return ((),)

    @classmethod
    def backplane(cls, args):
        """What a cluster's brokers join: by default None, one redis-server."""
        return None


def run_each_broker(args, scenario, transport, status):
    """Run ``scenario`` (a :class:`BrokerRun`) against each of ``args.servers``, started afresh with a publish
    token of its own for each variant: 0 when every run was clean, 130 when interrupted, else 1."""
    chosen = resolve_all(args.servers, status)
    for contender in chosen:
        contender.backplane = scenario.backplane(args)
    variants = scenario.variants(args)
    if not chosen:
        status.message("no broker to run")
        return 1

    def each_variant(contender, out):
        cleanly = 0
        for flags in variants:
            token = secrets.token_hex(16)
            status.message("%s (%s): %s" % (contender.label, contender.runtime, " ".join(contender.argv + list(flags))))
            with launched(contender, args.server_cpus, status, args.brokers, ["--publish-token", token] + list(flags),
                          out) as running:
                if running is None:
                    continue
                started = Started(contender.label, running, token, tuple(flags), out)
                outcome = runner.run_interruptible(scenario(started, args, status).run())
            if outcome.interrupted:
                raise Interrupted()
            if outcome.error is not None:
                status.message("%s: ended: %s" % (contender.label, outcome.error))
                continue
            status.message(scenario.verdict(outcome.value))
            cleanly += bool(scenario.clean(outcome.value))
        return cleanly

    prepare_client(args.client_cpus[0])
    out_path, cleanly = measure_each(args, chosen, status, each_variant,
                                     files.run_record(None, transport, args.command_line))
    if cleanly is None:
        return 130
    status.message("results: %s" % out_path)
    return 0 if cleanly == len(chosen) * len(variants) else 1
