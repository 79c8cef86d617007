"""``python -m loadtest --url URL --clients N``: sweep one server, write results, print a table."""

from broker.runtime import raise_open_files_limit
from loadtest import affinity, arguments, procstat, records, runner
from loadtest.client import endpoints, server_probe, sweep, tls_context
from loadtest.method import rules
from loadtest.results import console, files


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
    # --duration: the spelling before every command said --step-seconds.
    arguments.option(parser, "--step-seconds", "--duration", dest="duration", type=arguments.positive_float,
                     default=sweep.Options.duration,
                     help="seconds per step")
    arguments.option(parser, "--pause", type=arguments.non_negative_float, default=sweep.Options.pause,
                     help="seconds of quiet before each step")
    arguments.add_transport_or_mix(parser)
    arguments.option(parser, "--out", help="results file (default results/<timestamp>.jsonl)")
    arguments.option(parser, "--label", help="server name in the results (default: the URL's host:port)")
    arguments.option(parser, "--server-pid", type=arguments.comma_list(int),
                     help="measure this process's CPU and RSS; several, comma-separated, are summed")
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
    options = sweep.Options(
        args.url,
        levels=[args.clients] if args.clients is not None else (args.levels or rules.DEFAULT_LEVELS),
        rates=[args.rate] if args.rate is not None else None, duration=args.duration, pause=args.pause,
        transport=args.mix or args.transport, server=label, server_pids=args.server_pid or (),
        source_addresses=args.source_addresses or (), procs=args.procs, client_cpus=args.client_cpu or (),
    )
    out_path = args.out or files.default_path()
    status = console.StatusLine()
    steps = []

    with files.ResultsFile(out_path) as out:
        pids = args.server_pid or [None]
        out.write(files.run_record(",".join(args.url), options.transport, args.command_line))
        out.write(records.Server(server=label, runtime=server_probe.server_runtime(args.url[0], pids[0]),
                                 pid=pids[0] if len(pids) == 1 else None, cpu=args.server_cpu,
                                 tls=endpoints.target(args.url[0]).tls))

        def on_step(step):
            steps.append(step)
            out.write(step)
            status.step(step)

        def on_level(level):
            out.write(level)
            status.message("level %d ended: %s" % (level.level, level.end))

        outcome = runner.run_interruptible(sweep.sweep(options, on_step, on_level, status.progress))

    if steps:
        print(console.format_table(steps))
    if outcome.interrupted:
        status.message("interrupted: the %d steps measured are in %s" % (len(steps), out_path))
        return 130
    if outcome.error is not None:
        status.message("run ended: %s; the %d steps measured are in %s" % (outcome.error, len(steps), out_path))
        return 1
    status.message("results: %s" % out_path)
    return 0
