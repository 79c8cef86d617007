"""The load client's command-line options: each one's environment variable, and the types they share.

Rules:

- An option added with :func:`option` reads ``LOADTEST_<OPTION>`` as its default (:mod:`broker.flags`).
  Options that exclude each other read none: argparse checks only what is typed.
- Each type returns the value or raises ``argparse.ArgumentTypeError``: exit 2 before anything runs.
- Only loopback may be a target or a source address: a target's host must resolve to
  loopback only (:func:`is_loopback`: 127.0.0.0/8, ``::1``, ``::ffff:127.x.y.z``), a source
  address is an address, and ``--broker-flags`` may not move a broker or its Redis off
  loopback (:func:`broker_flags`).
- The options commands share where servers and load run (:func:`add_placement_arguments`,
  :func:`add_broker_run_arguments`) come with their readers (:func:`one_cpu_each`,
  :func:`broker_runs`), which give the typed values of :mod:`loadtest.contenders.placement`:
  a command reads its parsed arguments once, and nothing below the commands sees them."""

import argparse
import ipaddress
import math
import os
import socket
import urllib.parse

from broker.flags import Environment, file_error
from loadtest import affinity, records
from loadtest.client import tls_context
from loadtest.contenders import placement
from loadtest.framing import endpoints

DEFAULT_URL = "http://127.0.0.1:8080/broadcast"
ENVIRONMENT_PREFIX = "LOADTEST_"
# ``--transport``, the same in every command: ``add_argument("--transport", **TRANSPORT)``.
TRANSPORT = dict(type=records.transport_name, choices=endpoints.TRANSPORTS, default=endpoints.WEBSOCKET,
                 help="how the clients connect: SockJS over a websocket (sockjs is another name for it) or over "
                 "one of SockJS's HTTP transports, or a plain websocket (raw)")


def option(container, *names, **kwargs):
    """``container.add_argument(*names, **kwargs)``, its default read from ``LOADTEST_<NAME>``."""
    return Environment(ENVIRONMENT_PREFIX, os.environ).add(container, *names, **kwargs)


def _number(name, kind, accepted, refusal):
    """A type: a number read by ``kind``, refused with ``refusal`` unless ``accepted(value)``."""

    def parse(text):
        value = kind(text)
        if not accepted(value):
            raise argparse.ArgumentTypeError("%s, got %s" % (refusal, text))
        return value

    parse.__name__ = name  # argparse names it in errors
    return parse


positive_int = _number("positive_int", int, lambda value: value >= 1, "must be 1 or more")
non_negative_int = _number("non_negative_int", int, lambda value: value >= 0, "must be 0 or more")
positive_float = _number("positive_float", float, lambda value: value > 0 and math.isfinite(value),
                         "must be a number more than 0")
non_negative_float = _number("non_negative_float", float, lambda value: value >= 0 and math.isfinite(value),
                             "must be a number of 0 or more")


def name_from(what, known):
    """A type: one name from ``known``; another is refused with ``unknown <what> <name> (known: ...)``."""

    def parse(text):
        if text not in known:
            raise argparse.ArgumentTypeError("unknown %s %s (known: %s)" % (what, text, ", ".join(known)))
        return text

    parse.__name__ = "%s name" % what
    return parse


def names_from(what, known):
    """A type: a non-empty comma-separated list of names from ``known`` (as :func:`name_from`)."""

    def parse(text):
        chosen = [name.strip() for name in text.split(",") if name.strip()]
        unknown = [name for name in chosen if name not in known]
        if unknown or not chosen:
            raise argparse.ArgumentTypeError(
                "unknown %s %s (known: %s)" % (what, ", ".join(unknown) or "''", ", ".join(known)))
        return chosen

    parse.__name__ = "comma-separated %s names" % what  # argparse names it in errors
    return parse


def comma_list(parse_item):
    """A type: a non-empty comma-separated list, each item read by ``parse_item``."""

    def parse(text):
        items = [parse_item(item) for item in text.split(",") if item.strip()]
        if not items:
            raise argparse.ArgumentTypeError("expected a comma-separated list, got %r" % text)
        return items

    parse.__name__ = "comma-separated %s" % parse_item.__name__  # argparse names it in errors
    return parse


def transports(text):
    """A type: a non-empty comma-separated list of transports, each once, in the order given."""
    named = names_from("transport", endpoints.TRANSPORTS + tuple(records.TRANSPORT_ALIASES))(text)
    return list(dict.fromkeys(records.transport_name(name) for name in named))


# ``--transport`` of a command that measures several transports in turn:
# ``add_argument("--transport", **TRANSPORT_LIST)``; one transport still reads as itself.
TRANSPORT_LIST = dict(type=transports, default=[endpoints.WEBSOCKET], metavar="TRANSPORT[,...]",
                      help="how the clients connect, one transport or several measured in turn, comma-separated: "
                      "%s (sockjs is another name for websocket; default websocket)" % ", ".join(endpoints.TRANSPORTS))


def transport_mix(text):
    """``websocket=70,xhr-streaming=30``: transports and their whole weights, as a mix."""
    weights = {}
    for item in text.split(","):
        name, _, weight = (part.strip() for part in item.partition("="))
        name = records.transport_name(name)
        if name not in endpoints.TRANSPORTS or name in weights:
            raise argparse.ArgumentTypeError("%r is no transport, or twice (known: %s)" % (
                name, ", ".join(endpoints.TRANSPORTS)))
        if not weight.isdigit() or not int(weight):
            raise argparse.ArgumentTypeError("the weight of %s must be a whole number above 0, got %r" % (name, weight))
        weights[name] = int(weight)
    return endpoints.mix(weights)


# ``--mix``: ``add_argument("--mix", **MIX)``.
MIX = dict(type=transport_mix, help="transports by weight, e.g. websocket=70,xhr-streaming=20,xhr-polling=10: each "
           "client gets one by the weights, the same for the same client number every run")


def add_transport_or_mix(parser):
    """``--transport`` or ``--mix``, not both (reading no variable: the module's rules)."""
    how = parser.add_mutually_exclusive_group()
    how.add_argument("--transport", **TRANSPORT)
    how.add_argument("--mix", **MIX)


def is_loopback(address):
    """Whether the text ``address`` is a loopback address (the module's rules)."""
    try:
        parsed = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    mapped = getattr(parsed, "ipv4_mapped", None)
    return (mapped or parsed).is_loopback


def loopback_host(host):
    """``host`` (a name or an address) if every address it resolves to is loopback; else ArgumentTypeError."""
    try:
        found = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as error:
        raise argparse.ArgumentTypeError("only loopback servers may be load tested: %s does not resolve (%s)"
                                         % (host, error)) from None
    outside = sorted({info[4][0] for info in found if not is_loopback(info[4][0])})
    if outside or not found:
        resolved = "" if outside == [host] else ", which is %s" % (", ".join(outside) or "no address")
        raise argparse.ArgumentTypeError("only loopback servers may be load tested (got %s%s)" % (host, resolved))
    return host


def loopback_url(text):
    """A SockJS prefix on a loopback server, ``http://127.0.0.1:8080/broadcast`` (``https://`` over TLS)."""
    try:
        parts = urllib.parse.urlsplit(text)
        parts.port
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise argparse.ArgumentTypeError("must look like %s (https:// over TLS), got %r" % (DEFAULT_URL, text))
    loopback_host(parts.hostname)
    return text


def certificates(text):
    """A type: a PEM file of certificates a client context can trust (:func:`loadtest.client.tls_context.client_context`)."""
    try:
        tls_context.client_context(text)
    except OSError as error:
        raise argparse.ArgumentTypeError("cannot trust %s: %s" % (text, file_error(error)))
    return text


# ``--tls-ca``, beside ``--url`` wherever it is: ``option(parser, "--tls-ca", **TLS_CA)``; the command
# hands it to :func:`loadtest.client.tls_context.trust`.
TLS_CA = dict(type=certificates, metavar="PEM",
              help="with an https URL: trust the certificate authority (or self-signed certificate) in this "
              "file, and no other (default: the system's certificate authorities)")


def _loopback_address(text):
    if not is_loopback(text):
        raise argparse.ArgumentTypeError("must be loopback addresses (got %s)" % text)
    return text


def parse_source_addresses(text):
    """``127.0.0.2-127.0.0.9`` or ``127.0.0.2,127.0.0.3``: the list of loopback addresses
    (a range runs over the last number of one IPv4 /24)."""
    addresses = []
    for part in text.split(","):
        first, _, last = part.strip().partition("-")
        if not last:
            addresses.append(_loopback_address(first))
            continue
        head, _, low = _loopback_address(first).rpartition(".")
        other, _, high = _loopback_address(last.strip()).rpartition(".")
        if other != head or int(high) < int(low):
            raise argparse.ArgumentTypeError("a range runs up the last number, got %s" % part.strip())
        addresses.extend("%s.%d" % (head, n) for n in range(int(low), int(high) + 1))
    return addresses


def broker_flags(text):
    """``--broker-flags``: more flags for the brokers a command launches, one string, as typed."""
    words = text.split()  # as the commands split it
    for n, word in enumerate(words):
        name, equals, value = word.partition("=")
        if name not in ("--host", "--redis"):
            continue
        if not equals:
            value = words[n + 1] if n + 1 < len(words) else ""
        if name == "--redis":
            if value.startswith("unix://"):
                continue
            value = urllib.parse.urlsplit(value).hostname or ""
        loopback_host(value)
    return text


# -- where the servers and the load run --------------------------------------------------------------

def add_placement_arguments(parser, server_cpu_help, transport=TRANSPORT):
    """The options ``compare`` and ``soak`` share: CPUs, ``--transport``, results, the brokers' flags
    (the CPUs read by :func:`one_cpu_each`)."""
    server_cpu, client_cpu = affinity.default_cpus()
    group = parser.add_argument_group("placement")
    option(group, "--server-cpu", type=int, default=server_cpu, help=server_cpu_help % server_cpu)
    option(group, "--client-cpu", type=int, default=client_cpu,
           help="CPU the load client runs on (default %d, the second this process may use)" % client_cpu)
    option(group, "--transport", **transport)
    option(group, "--source-addresses", type=parse_source_addresses,
           help="local addresses to spread connections over, e.g. 127.0.0.2-127.0.0.9")
    option(group, "--out", help="results file (default results/<timestamp>.jsonl)")
    option(group, "--broker-flags", type=broker_flags, default="",
           help="more flags for every broker launched, one string (e.g. \"--warm-up-sessions 3000\"); the "
           "other servers run as they are")


def one_cpu_each(args, procs=None):
    """The :class:`~loadtest.contenders.placement.Placement` of ``--server-cpu`` and ``--client-cpu``,
    with ``procs`` client processes (None: one per ``CONNECTIONS_PER_PROC`` connections)."""
    return placement.Placement((args.server_cpu,), (args.client_cpu,), procs)


def add_broker_run_arguments(parser, servers, default, brokers=3):
    """The options of :func:`~loadtest.contenders.placement.run_each_broker`: ``--servers``, ``--brokers``,
    ``--procs``, the CPUs, ``--out`` (read by :func:`broker_runs`)."""
    option(parser, "--servers", type=names_from("server", servers), default=list(default),
           help="comma-separated, from %s (default: %s)" % (",".join(servers), ",".join(default)))
    option(parser, "--brokers", type=positive_int, default=brokers, help="broker processes of each cluster-* server")
    option(parser, "--procs", type=positive_int,
           help="client processes (default: one per %d connections)" % placement.CONNECTIONS_PER_PROC)
    server_cpu, client_cpu = affinity.default_cpus()
    option(parser, "--server-cpus", type=comma_list(int), default=[server_cpu],
           help="CPUs the brokers run on, broker i on the i-th in turn (default %d, the first "
           "this process may use)" % server_cpu)
    option(parser, "--client-cpus", type=comma_list(int), default=[client_cpu],
           help="CPUs the client processes run on, in turn (default %d, the second this "
           "process may use)" % client_cpu)
    option(parser, "--out", help="results file (default results/<timestamp>.jsonl)")


def broker_runs(args):
    """The :class:`~loadtest.contenders.placement.BrokerRuns` of :func:`add_broker_run_arguments`' options."""
    where = placement.Placement(tuple(args.server_cpus), tuple(args.client_cpus), args.procs)
    return placement.BrokerRuns(tuple(args.servers), args.brokers, where, args.out, tuple(args.command_line))
