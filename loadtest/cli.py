"""``python -m loadtest --url URL --clients N``: sweep one server, write results, print a table."""

import argparse
import asyncio
import math
import signal
import sys
import urllib.parse

from loadtest import affinity, client, procstat, report, results, runtime, sweep, workers

DEFAULT_URL = "http://127.0.0.1:8080/broadcast"


def positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more, got %s" % text)
    return value


def positive_float(text):
    value = float(text)
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError("must be a number more than 0, got %s" % text)
    return value


def comma_list(parse_item):
    """An argparse type: a non-empty comma-separated list, each item read by ``parse_item``."""

    def parse(text):
        items = [parse_item(item) for item in text.split(",") if item.strip()]
        if not items:
            raise argparse.ArgumentTypeError("expected a comma-separated list, got %r" % text)
        return items

    parse.__name__ = "comma-separated %s" % parse_item.__name__  # argparse names it in errors
    return parse


def build_parser():
    parser = argparse.ArgumentParser(
        prog="python -m loadtest",
        description="Round-trip latency sweep of a SockJS broadcast server "
        "(subcommands: ping, selftest, compare, soak; see `python -m loadtest compare --help` "
        "and `python -m loadtest soak --help`).",
        epilog="Without --rate each level steps from %d to %d msgs/s, x%.2f a step, until the "
        "server is overloaded (a connection lost, a message not back within %g s, or a mean "
        "round trip above %g ms)." % (sweep.FIRST_RATE, sweep.LAST_RATE, sweep.RATE_RATIO,
                                     client.LOSS_AFTER_S, sweep.MAX_MEAN_RTT_MS),
    )
    parser.add_argument("--url", default=DEFAULT_URL,
                        help="SockJS prefix of the server under test (default %(default)s, where "
                        "python -m broker listens)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--clients", type=positive_int, help="one concurrency level")
    which.add_argument("--levels", type=comma_list(positive_int),
                       help="comma-separated levels (default %s)" % ",".join(map(str, sweep.DEFAULT_LEVELS)))
    parser.add_argument("--rate", type=positive_float,
                        help="one fixed step at this total rate (msgs/s) instead of the rate sweep")
    parser.add_argument("--duration", type=positive_float, default=10.0, help="seconds per step (default 10)")
    parser.add_argument("--pause", type=float, default=2.0, help="seconds of quiet before each step (default 2)")
    parser.add_argument("--transport", choices=("sockjs", "raw"), default="sockjs")
    parser.add_argument("--out", help="results file (default results/<timestamp>.jsonl)")
    parser.add_argument("--label", help="server name in the results (default: the URL's host:port)")
    parser.add_argument("--server-pid", type=int, help="measure this process's CPU and RSS")
    parser.add_argument("--procs", type=positive_int, default=1, help="spread the clients over N processes")
    parser.add_argument("--client-cpu", type=comma_list(int),
                        help="pin the load client to this CPU; with --procs, a list: worker i "
                        "runs on the i-th CPU (round-robin)")
    parser.add_argument("--server-cpu", type=int, help="pin --server-pid to this CPU")
    parser.add_argument("--source-addresses", type=client.parse_source_addresses,
                        help="local addresses to spread connections over, e.g. 127.0.0.2-127.0.0.9")
    return parser


def check_target(parser, url):
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        parser.error("--url must look like http://127.0.0.1:8080/broadcast")
    if not (parts.hostname.startswith("127.") or parts.hostname in ("localhost", "::1")):
        parser.error("only loopback servers may be load tested (got %s)" % parts.hostname)


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    check_target(parser, args.url)
    for address in args.source_addresses or []:
        if not address.startswith("127."):
            parser.error("--source-addresses must be loopback addresses (got %s)" % address)
    if args.server_cpu is not None and args.server_pid is None:
        parser.error("--server-cpu needs --server-pid")
    if args.server_pid is not None:
        try:
            procstat.cpu_seconds(args.server_pid)
        except procstat.ProcessGone:
            parser.error("--server-pid %d: no such process" % args.server_pid)
    levels = [args.clients] if args.clients is not None else (args.levels or list(sweep.DEFAULT_LEVELS))
    if args.client_cpu is not None:
        affinity.pin(0, args.client_cpu[0])
    if args.server_cpu is not None:
        affinity.pin(args.server_pid, args.server_cpu)
    runtime.raise_open_files_limit()
    label = args.label or urllib.parse.urlsplit(args.url).netloc
    out_path = args.out or results.default_path()
    status = report.StatusLine()
    steps = []

    with results.ResultsFile(out_path) as out:
        out.write(results.run_record(args.url, args.transport, ["python", "-m", "loadtest"] + sys.argv[1:]))
        out.write(results.server_record(label, runtime.server_runtime(args.url, args.server_pid), args.server_pid,
                                        args.server_cpu))

        def on_step(record):
            steps.append(record)
            out.write(record)
            status.step(record)

        def on_level(record):
            out.write(record)
            status.message("level %d ended: %s" % (record["level"], record["end"]))

        options = dict(
            rates=[args.rate] if args.rate is not None else None, duration=args.duration, pause=args.pause,
            transport=args.transport, server=label, server_pid=args.server_pid,
            source_addresses=args.source_addresses, procs=args.procs, client_cpus=args.client_cpu,
            on_step=on_step, on_level=on_level,
            on_progress=status.progress,
        )
        outcome = run_interruptible(sweep.sweep(args.url, levels, **options))

    if steps:
        print(report.format_table(steps))
    if outcome == "interrupted":
        status.message("interrupted: the %d steps measured are in %s" % (len(steps), out_path))
        return 130
    if isinstance(outcome, Exception):
        status.message("run ended: %s; the %d steps measured are in %s" % (outcome, len(steps), out_path))
        return 1
    status.message("results: %s" % out_path)
    return 0


def run_interruptible(coroutine):
    """Run ``coroutine``; Ctrl-C cancels it cleanly. Returns "done", "interrupted" or a ServerGone."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    task = loop.create_task(coroutine)
    loop.add_signal_handler(signal.SIGINT, task.cancel)
    try:
        loop.run_until_complete(task)
        return "done"
    except asyncio.CancelledError:
        return "interrupted"
    except (sweep.ServerGone, workers.WorkerLost) as exc:
        return exc
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
