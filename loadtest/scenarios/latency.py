"""``python -m loadtest --url URL --clients N``: sweep one server, write results, say what it found.

Rules: it says first what it runs, for how long at most and where the results go; at the
end, on Ctrl-C or an error, the summary and a results file complete to the last step (a
level cut short ends ``interrupted`` or ``server gone``). Without ``--server-pid`` the
server is what listens where ``--url`` points (:func:`loadtest.client.server_probe.listening_pids`)."""

from broker.flags import Former
from broker.runtime import raise_open_files_limit
from loadtest import affinity, arguments, procstat, records, runner
from loadtest.client import server_probe, sweep, tls_context
from loadtest.errors import ServerGone
from loadtest.framing import endpoints
from loadtest.method import rules
from loadtest.results import console, files

STEP_S = 5.0
PAUSE_S = 1.0

SUMMARY = "round-trip latency sweep of one server (the command when none is named)"
DESCRIPTION = "Round-trip latency sweep of a SockJS broadcast server already running."
EPILOG = ("Without --rate each level of N clients starts near %s deliveries/s (N x rate, 1 msg/s "
        "at least) and raises the rate x%.2f a step until the server is overloaded (a connection lost, "
        "a message not back within %g s, or a mean round trip above %g ms), or the client is "
        "(client-bound), at most to %s msgs/s and %s deliveries/s." % (
            "{:,}".format(rules.FIRST_DELIVERIES_PER_S), rules.RATE_RATIO, rules.LOSS_AFTER_S,
            rules.MAX_MEAN_RTT_MS, "{:,}".format(rules.MAX_RATE), "{:,}".format(rules.MAX_DELIVERIES_PER_S)))


def add_arguments(parser):
    arguments.option(parser, "--url", type=arguments.comma_list(arguments.loopback_url), default=[arguments.DEFAULT_URL],
                     help="SockJS prefix of the server under test (default %s, where python -m broker "
                     "listens; loopback only); several, comma-separated, spread the clients over the "
                     "brokers of a cluster in turn; https: every connection over TLS" % arguments.DEFAULT_URL)
    arguments.option(parser, "--tls-ca", **arguments.TLS_CA)
    # Options that exclude each other read no variable: argparse checks only what is typed, so a
    # variable could win over the flag that excludes it.
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--clients", type=arguments.positive_int, help="one concurrency level")
    which.add_argument("--levels", type=arguments.comma_list(arguments.positive_int),
                       help="comma-separated levels (default %s)" % ",".join(map(str, rules.DEFAULT_LEVELS)))
    arguments.option(parser, "--rate", type=arguments.positive_float,
                     help="one fixed step at this total rate (msgs/s) instead of the rate sweep")
    # --duration: the former name, which in soak, feed and rooms is the whole run's length.
    arguments.option(parser, "--step-seconds", dest="duration", formerly=Former(("--duration",)),
                     type=arguments.positive_float, default=STEP_S, help="seconds per step (default %g)" % STEP_S)
    arguments.option(parser, "--pause", type=arguments.non_negative_float, default=PAUSE_S,
                     help="seconds of quiet before each step (default %g)" % PAUSE_S)
    arguments.add_transport_or_mix(parser)
    arguments.option(parser, "--out", help="results file (default results/<timestamp>.jsonl)")
    arguments.option(parser, "--label", help="server name in the results (default: the URL's host:port)")
    arguments.option(parser, "--server-pid", type=arguments.comma_list(int),
                     help="measure this process's CPU and RSS; several, comma-separated, are summed "
                     "(default: the processes listening where --url points, if this user's)")
    arguments.option(parser, "--procs", type=arguments.positive_int, default=sweep.Options.procs,
                     help="spread the clients over N processes")
    arguments.option(parser, "--client-cpu", type=arguments.comma_list(int),
                     help="pin the load client to this CPU; with --procs, a list: worker i "
                     "runs on the i-th CPU (round-robin)")
    arguments.option(parser, "--server-cpu", type=int, help="pin every --server-pid to this CPU")
    arguments.option(parser, "--source-addresses", type=arguments.parse_source_addresses,
                     help="local addresses to spread connections over, e.g. 127.0.0.2-127.0.0.9")


def run(parser, args):
    if args.server_cpu is not None and args.server_pid is None:
        parser.error("--server-cpu needs --server-pid")
    if len({endpoints.target(url).tls for url in args.url}) > 1:
        parser.error("--url: the servers of one run are all http or all https")
    if endpoints.RAW in (args.mix or args.transport or "") and any(endpoints.target(u).positions for u in args.url):
        parser.error("?positions=1 is SockJS's: the raw websocket carries no envelopes to count")
    for pid in args.server_pid or ():
        try:
            procstat.cpu_seconds(pid)
        except procstat.ProcessGone:
            parser.error("--server-pid %d: no such process" % pid)
    if args.client_cpu is not None:
        affinity.pin(0, args.client_cpu[0])
    for pid in args.server_pid or ():
        affinity.pin(pid, args.server_cpu)
    raise_open_files_limit()
    tls_context.trust(args.tls_ca)
    label = args.label or ",".join(endpoints.target(url).netloc for url in args.url)
    pids = args.server_pid or server_probe.listening_pids(args.url)
    options = sweep.Options(
        args.url, levels=[args.clients] if args.clients is not None else (args.levels or rules.DEFAULT_LEVELS),
        rates=[args.rate] if args.rate is not None else None, duration=args.duration, pause=args.pause,
        transport=args.mix or args.transport, server=label, server_pids=pids,
        source_addresses=args.source_addresses, procs=args.procs, client_cpus=args.client_cpu)
    out_path = args.out or files.default_path()
    status = console.StatusLine()
    schedules = [(level, options.schedule(level)) for level in options.levels]
    step_s = options.duration + options.pause
    written = []
    runtime = server_probe.server_runtime(args.url[0], pids[0] if pids else None)
    status.message(console.sweep_header(
        "%s (%s) over %s" % (",".join(args.url), runtime or "runtime unknown", options.transport), schedules, step_s,
        "measured, pid %s" % ", ".join("%d (%s)" % (pid, procstat.runtime_of(pid)) for pid in pids) if pids
        else console.SERVER_UNKNOWN, out_path))

    with files.ResultsFile(out_path) as out:
        def record(line):
            written.append(line)
            out.write(line)

        record(files.run_record(",".join(args.url), options.transport, args.command_line))
        record(records.Server(server=label, runtime=runtime, pid=pids[0] if len(pids) == 1 else None,
                              cpu=args.server_cpu, tls=endpoints.target(args.url[0]).tls))
        count = {"steps": 0, "levels": 0, "steps_of_levels": 0}  # so far: steps, levels ended and their steps

        def on_step(step):
            record(step)
            count["steps"] += 1
            most = count["steps_of_levels"] + sum(len(rates) for _, rates in schedules[count["levels"]:])
            status.step(step, console.sweep_progress(count["steps"], most, step_s))

        def on_level(level):
            record(level)
            count["levels"] += 1
            count["steps_of_levels"] = count["steps"]
            status.message("level %d stopped: %s" % (level.level, console.level_end_line(level.end)))

        outcome = runner.run_interruptible(sweep.sweep(options, on_step, on_level, status.progress))
        cut = (rules.End.INTERRUPTED.text() if outcome.interrupted else
               rules.End.SERVER_GONE.text(str(outcome.error)) if isinstance(outcome.error, ServerGone) else None)
        if cut is not None and count["levels"] < len(options.levels):
            record(records.Level(server=label, transport=options.transport, level=options.levels[count["levels"]],
                                 end=cut))

    print(console.sweep_summary(written, out_path), flush=True)
    steps = count["steps"]
    if outcome.interrupted:
        status.message("interrupted: the %d steps measured are in %s" % (steps, out_path))
        return 130
    if outcome.error is not None:
        status.message("run ended: %s; the %d steps measured are in %s" % (outcome.error, steps, out_path))
        return 1
    return 0
