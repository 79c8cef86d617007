"""Where a benchmark runs: the server's and the client's CPUs, the contenders that can run here, launching them.

Rules:

- Everything here takes typed values (:class:`Placement`, :class:`BrokerRuns`, a scenario's own
  settings), never the command line: each command reads its options into them once
  (:mod:`loadtest.arguments`), and a refusal comes back as a message the command hands to argparse.
- What the commands that start servers share: pin the load client, launch each contender on its
  CPUs and record it (:func:`launched`), measure each in turn into one results file
  (:func:`measure_each`). One client process holds at most ``CONNECTIONS_PER_PROC`` connections.
- A scenario against brokers it starts is a :class:`BrokerRun` that :func:`run_each_broker` runs."""

import contextlib
import dataclasses
import secrets
from typing import NamedTuple, Optional, Tuple

from broker.runtime import raise_open_files_limit
from loadtest import affinity, records, runner
from loadtest.contenders import child_process, registry, server_group
from loadtest.errors import Interrupted
from loadtest.framing import endpoints
from loadtest.results import files

CONNECTIONS_PER_PROC = 10000
# A broker's --warm-up-sessions may take up to 60 s before it listens.
LAUNCH_TIMEOUT_S = 90.0


@dataclasses.dataclass(frozen=True)
class Placement:
    """Where a run's processes go: server ``i`` on ``server_cpus[i % len]``, client process ``i`` on
    ``client_cpus[i % len]``, and ``procs`` client processes (None: one per ``CONNECTIONS_PER_PROC``)."""

    server_cpus: Tuple[int, ...]
    client_cpus: Tuple[int, ...]
    procs: Optional[int] = None

    def client_procs(self, connections):
        """``procs``, or one client process per CONNECTIONS_PER_PROC of ``connections``."""
        return self.procs or -(-connections // CONNECTIONS_PER_PROC)

    def refusal(self, available):
        """Why this placement cannot run on the CPUs ``available`` (as ``--server-cpu`` and ``--client-cpu``
        name them), or None: each of its CPUs is one of them, the servers' apart from the client's."""
        for option, cpus in (("--server-cpu", self.server_cpus), ("--client-cpu", self.client_cpus)):
            for cpu in cpus:
                if cpu not in available:
                    return "%s %d: this process may run on CPUs %s only" % (
                        option, cpu, ",".join(map(str, sorted(available))))
        if set(self.server_cpus) & set(self.client_cpus):
            return "--server-cpu and --client-cpu must differ"
        return None


@dataclasses.dataclass(frozen=True)
class BrokerRuns:
    """What :func:`run_each_broker` runs against and where: the ``servers`` by name, ``brokers`` processes
    of each cluster, the :class:`Placement`, the results file ``out`` (None: a new one, named when the
    measuring starts) and the ``command`` its first line records."""

    servers: Tuple[str, ...]
    brokers: int
    placement: Placement
    out: Optional[str]
    command: Tuple[str, ...]


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


def measure_each(out_path, chosen, status, measure, run_line, last=None):
    """Measure each contender of ``chosen`` into the results file ``out_path`` (None: a new one in results/)
    after its ``run_line``, then ``last(out)``: ``(path, the runs that went through in full)``
    (``measure(contender, out)`` counts them), or ``(path, None)`` when Ctrl-C ended it."""
    out_path = out_path or files.default_path()
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


class Started(NamedTuple):
    """A server started for one run: ``label``, ``cluster``, publish ``token``, the variant's ``flags``, ``out``."""

    label: str
    cluster: server_group.Cluster
    token: str
    flags: Tuple[str, ...]
    out: files.ResultsFile


class BrokerRun:
    """One run of a scenario against one server :func:`run_each_broker` started (its :class:`Started`), with
    the scenario's own typed ``settings``, ``where`` its processes go (a :class:`Placement`, kept as
    ``placement``) and ``status``. A subclass has ``run()``, the coroutine that writes its records and returns
    its summary, and the static ``verdict(summary)`` (the line a person reads) and ``clean(summary)`` (whether
    the run passed)."""

    def __init__(self, started, settings, where, status):
        self.label, self.cluster, self.token, self.flags, self.out = started
        self.settings = settings
        self.placement = where
        self.status = status

    @classmethod
    def variants(cls, settings):
        """The flag lists the servers run with, one run each: by default one, with none."""
        return ((),)

    @classmethod
    def secret_flags(cls, settings):
        """Flags the servers also run with that are never shown, a secret's: by default none."""
        return ()

    @classmethod
    def backplane(cls, settings):
        """What a cluster's brokers join: by default None, one redis-server."""
        return None


def run_each_broker(runs, scenario, settings, transport, status):
    """Run ``scenario`` (a :class:`BrokerRun` with its ``settings``) against each server of ``runs`` (a
    :class:`BrokerRuns`), started afresh with a publish token of its own for each variant: 0 when every run
    was clean, 130 when interrupted, else 1."""
    chosen = resolve_all(runs.servers, status)
    for contender in chosen:
        contender.backplane = scenario.backplane(settings)
    variants = scenario.variants(settings)
    if not chosen:
        status.message("no broker to run")
        return 1
    where = runs.placement

    def each_variant(contender, out):
        cleanly = 0
        for flags in variants:
            token = secrets.token_hex(16)
            status.message("%s (%s): %s" % (contender.label, contender.runtime, " ".join(contender.argv + list(flags))))
            with launched(contender, where.server_cpus, status, runs.brokers,
                          ["--publish-token", token] + list(scenario.secret_flags(settings)) + list(flags),
                          out) as running:
                if running is None:
                    continue
                started = Started(contender.label, running, token, tuple(flags), out)
                outcome = runner.run_interruptible(scenario(started, settings, where, status).run())
            if outcome.interrupted:
                raise Interrupted()
            if outcome.error is not None:
                status.message("%s: ended: %s" % (contender.label, outcome.error))
                continue
            status.message(scenario.verdict(outcome.value))
            cleanly += bool(scenario.clean(outcome.value))
        return cleanly

    prepare_client(where.client_cpus[0])
    out_path, cleanly = measure_each(runs.out, chosen, status, each_variant,
                                     files.run_record(None, transport, runs.command))
    if cleanly is None:
        return 130
    status.message("results: %s" % out_path)
    return 0 if cleanly == len(chosen) * len(variants) else 1
