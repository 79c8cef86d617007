"""Settings from command-line flags, each with an environment variable as its default.

Rules this module keeps:

* Every flag has a type that checks its value at start, whether it was typed
  or came from its variable (:mod:`broker.flags`): a value outside the range
  the broker works in stops it before anything runs, with one line naming the
  flag (and the variable, when the value came from it), and exit status 2
  (:data:`CONFIGURATION_ERROR`), which the systemd unit does not retry. What
  can only be checked later, at start (a certificate that cannot be served, a
  port another process holds, a Redis URL's options), stops it the same way
  (:func:`refuse_at_start`): one line, the flag and its variable named, never a
  secret, never a traceback.
* A text is matched whole (``fullmatch``): a pattern's ``$`` would let a
  trailing line break through.
* A number's range is one of the few below (:data:`TIMER`, :data:`LONG`, ...),
  stated once and shown at the end of the flag's help, so the configuration
  page, built from that help, shows it too. The bounds are where the broker
  was made to work: past them a timer's arithmetic overflows, Redis refuses
  an expiry, a socket option overflows, or a burst holds less than one message.
"""

import argparse
import dataclasses
import ipaddress
import os
import re
import socket
import sys
from typing import Optional, Tuple

import broker
from broker.cluster import redis_address
from broker.core import origins
from broker.core.limits import TrustedProxies
from broker.flags import REFUSED, Environment, Flag, Parser, count, one_line, rate, seconds, size, variable
from broker.ops import pypy_environment
from broker.protocol import tokens

HOUR, DAY = 3600, 86400
# Durations: the shortest a timer of the broker is set to, and the longest.
SHORTEST = 0.1
TIMER = seconds(SHORTEST, HOUR)
TIMER_OR_NEVER = seconds(SHORTEST, HOUR, off=True)
# What is kept for long, or lives long: a message's history, a connection.
LONG_OR_NEVER = seconds(SHORTEST, 30 * DAY, off=True)
# Messages kept, or replayed to each new subscriber.
MESSAGES = count(0, 1000000)
CONNECTIONS = 10000000
PORT = count(0, 65535)
# The fastest rate; the slowest is the least whose burst holds one message or session
# (broker.core.token_bucket): 0.5 for --client-rate (bursts of 2N), any for --max-accept-rate
# (bursts of at least 1).
MOST_A_SECOND = 1000000.0
TOKEN_CHARACTERS = re.compile(r"[\x21-\x7e]{1,4096}")
# How the broker names itself in its help and its refusals: as it was started, by the command
# setup.py installs or as a module.
COMMAND = "sockjs-broker"
PROGRAM = "python -m broker"
ENVIRONMENT_PREFIX = "BROKER_"

# argparse's status for a bad flag, and the broker's for any setting refused at start.
CONFIGURATION_ERROR = REFUSED


@dataclasses.dataclass(frozen=True)
class Config:
    host: str = "127.0.0.1"
    port: int = 8080
    prefix: str = "/broadcast"
    publish_token: Optional[str] = None
    admin_token: Optional[str] = None
    token_secret: Optional[str] = None
    token_public_key: Optional[str] = None
    private_rooms: Optional[Tuple[str, ...]] = None
    replay: int = 0
    history: int = 1000
    history_seconds: float = 0.0
    idempotency_window: float = 600.0
    max_rooms: int = 10000
    max_session_rooms: int = 16
    max_rooms_history: int = 256 << 20
    redis: Optional[str] = None
    redis_min_replicas: Optional[int] = None
    client_publish: bool = True
    allowed_origins: Tuple[str, ...] = (origins.ANY,)
    client_rate: float = 100.0
    max_message_size: int = 64 * 1024
    max_buffer: int = 1024 * 1024
    write_timeout: float = 30.0
    send_buffer: int = 64 * 1024
    max_connections: Optional[int] = None
    max_connections_per_ip: int = 0
    max_accept_rate: float = 0.0
    client_address_header: Optional[str] = None
    trusted_proxies: Tuple[str, ...] = ("127.0.0.0/8", "::1")
    header_timeout: float = 20.0
    body_timeout: float = 20.0
    ws_ping_interval: float = 25.0
    ws_ping_timeout: float = 20.0
    heartbeat_delay: float = 25.0
    disconnect_delay: float = 5.0
    drain_seconds: float = 10.0
    max_connection_age: float = 0.0
    announce_audience: float = 0.0
    certfile: Optional[str] = None
    keyfile: Optional[str] = None
    warm_up: int = 0
    pypy_jit: Optional[str] = None
    log_level: str = "info"

    @property
    def url(self):
        return http_url(self.host, self.port, self.prefix, self.certfile is not None)


def http_url(host, port, path, tls=False):
    """``http://host:port/path`` (``https`` with ``tls``), with an IPv6 host in brackets."""
    return "%s://%s:%d%s" % ("https" if tls else "http", "[%s]" % host if ":" in host else host, port, path)


def _prefix(text):
    if not re.fullmatch(r"(/[A-Za-z0-9_.~-]+)+", text):
        raise argparse.ArgumentTypeError("prefix must look like /broadcast, got %r" % text)
    return text


def _redis_url(text):
    try:
        redis_address.parse(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def listen_address(text):
    """An IP address, or a name the resolver knows, to listen on, in ASCII (the resolver
    would read ``127.0.0.１`` as 127.0.0.1)."""
    if not text.isascii():
        raise argparse.ArgumentTypeError("cannot listen on %r: an address or a name is ASCII" % text)
    try:
        ipaddress.ip_address(text)
        return text
    except ValueError:
        pass
    try:
        socket.getaddrinfo(text, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as error:
        raise argparse.ArgumentTypeError("cannot listen on %r: %s" % (text, error)) from None
    return text


def _token(text):
    """A bearer token: 1 to 4096 visible ASCII characters (no space), or nothing (none)."""
    if text == "":
        return None
    if not TOKEN_CHARACTERS.fullmatch(text):
        raise argparse.ArgumentTypeError("a token is 1 to 4096 visible ASCII characters, without spaces")
    return text


def _two_tokens(text, least=1):
    """One token, or two separated by a space (the one in use first, then the one rotated out),
    each of ``least`` to 4096 visible ASCII characters; or nothing (none)."""
    if text == "":
        return None
    parts = text.split(" ")
    if len(parts) > 2 or not all(TOKEN_CHARACTERS.fullmatch(part) and len(part) >= least for part in parts):
        raise argparse.ArgumentTypeError("one token, or two separated by a space, each %d to 4096 visible ASCII "
                                         "characters" % least)
    return text


def _token_secret(text):
    return _two_tokens(text, tokens.MIN_SECRET)


def _patterns(text):
    """Comma-separated patterns of rooms (:mod:`broker.protocol.tokens`), or none."""
    listed = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    bad = [pattern for pattern in listed if not tokens.valid_pattern(pattern)]
    if bad:
        raise argparse.ArgumentTypeError("a pattern is a room's name, a prefix of one followed by *, or *; not %r"
                                         % bad[0][:80])
    return listed


_CONNECTIONS = count(1, CONNECTIONS)


def _max_connections(text):
    """``auto``, or a count of connections."""
    if text.strip().lower() == "auto":
        return None
    try:
        return _CONNECTIONS(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError("must be auto, or %s, got %s" % (_CONNECTIONS.range, text)) from None


def _networks(text):
    listed = tuple(part.strip() for part in text.split(",") if part.strip())
    try:
        TrustedProxies(listed)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return listed


def _header_name(text):
    if not re.fullmatch(r"[A-Za-z0-9-]+", text):
        raise argparse.ArgumentTypeError("not a header name: %r" % text)
    return text


def _jit_parameters(text):
    if not re.fullmatch(r"off|[a-z_]+=[A-Za-z0-9_:]+(,[a-z_]+=[A-Za-z0-9_:]+)*", text):
        raise argparse.ArgumentTypeError("not JIT parameters: %r (try threshold=200,trace_limit=2000, or off)" % text)
    unknown = pypy_environment.unknown_jit_parameters(text)
    if unknown:
        raise argparse.ArgumentTypeError("this PyPy's JIT has no %s" % ", ".join(unknown))
    return text


def _origins(text):
    listed = tuple(part.strip() for part in text.split(",") if part.strip())
    try:
        origins.OriginPolicy(listed)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return listed



DEFAULTS = Config()

FLAGS = (
    Flag("--host", "address to listen on", DEFAULTS.host, listen_address, "ADDRESS"),
    Flag("--port", "port to listen on, 0 for any free port", str(DEFAULTS.port), PORT, "PORT"),
    Flag("--prefix", "URL prefix of the SockJS service", DEFAULTS.prefix, _prefix),
    Flag("--publish-token", "bearer token for POST /publish, or two separated by a space while rotating (the "
         "new first); a JWT signed as --token-secret says publishes in its rooms only; without either the "
         "endpoint is disabled; prefer the environment, flags show in ps", type=_two_tokens, metavar="TOKEN",
         secret=True),
    Flag("--token-secret", "HS256 secret (32 characters or more) that signs tokens (JWT): pages' tokens to join "
         "--private-rooms, backends' scoped publish tokens; two separated by a space while rotating",
         type=_token_secret, metavar="SECRET", secret=True),
    Flag("--token-public-key", "PEM file of the public key(s) that check RS256 (RSA) or ES256 (EC P-256) tokens, "
         "for backends that keep their signing key to themselves; two keys in the file while rotating",
         metavar="PEM"),
    Flag("--private-rooms", "comma-separated patterns of the named rooms a session joins only with a token "
         "naming them (a name, a prefix followed by *, or * for every named room); the room of URLs without ?rooms= is always public",
         None, _patterns, "PATTERNS", shown="none: every room public"),
    Flag("--admin-token", "bearer token for POST /admin/drain, which drains the broker as SIGTERM does; "
         "without one the endpoint is disabled and only a signal drains; never the publish token, so that "
         "a backend that may publish may not stop brokers", type=_token, metavar="TOKEN", secret=True),
    Flag("--replay", "send each new subscriber, and one told of a gap, the last N messages first and, if N is "
         "1 or more, the latest message of every ?key=; counters (?op=add) come whatever N",
         str(DEFAULTS.replay), MESSAGES, "N"),
    Flag("--history", "keep the room's last N messages, so that a client reconnecting with its position "
         "(?positions=1&epoch=E&since=OFFSET) gets every message it missed; older is a gap",
         str(DEFAULTS.history), MESSAGES, "N"),
    Flag("--idempotency-window", "seconds a POST /publish Idempotency-Key is remembered: a retry within it "
         "publishes nothing and gets the first answer", "%g" % DEFAULTS.idempotency_window, seconds(SHORTEST, DAY),
         "SECONDS"),
    Flag("--history-seconds", "keep no message of the history longer than this; 0: only --history bounds it",
         "%g" % DEFAULTS.history_seconds, LONG_OR_NEVER, "SECONDS"),
    Flag("--max-rooms", "named rooms the broker holds at once (?rooms=NAME, POST /publish?room=NAME), each "
         "made on first use and forgotten when empty and idle past --history-seconds (60 s when 0); a new one "
         "past it is refused: a session closed with 3014, a publish answered 429; 0: no named room (3013, 400)",
         str(DEFAULTS.max_rooms), count(0, 1000000), "N"),
    Flag("--max-rooms-history", "bytes the named rooms' histories hold together (their messages' JSON texts); "
         "past it, once a second, the largest histories forget their oldest messages (a resume past them is "
         "told a gap); the room of URLs without ?rooms= keeps its own bound, --history",
         str(DEFAULTS.max_rooms_history), size(1 << 10, 1 << 40), "SIZE"),
    Flag("--max-session-rooms", "rooms one session may join (?rooms=A,B,...); more are refused with 3013",
         str(DEFAULTS.max_session_rooms), count(1, 1000), "N"),
    Flag("--announce-audience", "tell every client how many watch the room (every broker's clients), as the "
         "message {\"audience\": N}, at most once this many seconds and only when it changed; 0: never",
         "%g" % DEFAULTS.announce_audience, TIMER_OR_NEVER, "SECONDS"),
    Flag("--redis", "join a cluster: every message goes through the room's stream in this Redis, and every "
         "broker of the cluster delivers it in the stream's order. URL: redis://[:PASSWORD@]HOST:PORT/DB; "
         "rediss://... over TLS (?ssl_ca_certs=PEM to trust a private authority); unix:///PATH?db=DB for a "
         "Unix socket; redis+sentinel://[:PASSWORD@]HOST:PORT[,HOST:PORT...]/NAME[/DB] to follow a Sentinel "
         "failover",
         type=_redis_url, metavar="URL", shown="none: one process"),
    Flag("--redis-min-replicas", "answer a publish 200 only once this many of the Redis primary's replicas "
         "have it (one WAIT a transaction), so that a failover keeps it; else 503 with Retry-After, and a "
         "retry with its Idempotency-Key publishes it once", type=count(0, 16), metavar="N",
         shown="none: 1 with redis+sentinel://, else 0"),
    Flag("--no-client-publish", "feed mode: clients only listen, backends publish over HTTP", switch=True,
         inverted=True, dest="client_publish"),
    Flag("--allowed-origins", "comma-separated origins (https://example.com) whose pages may use the broker, "
         "or * for any; a page of another origin gets 403 for /info, websockets, every request of a polling "
         "or streaming session and sends, and no CORS answer; requests without Origin are never refused for it",
         ",".join(DEFAULTS.allowed_origins), _origins, "ORIGINS"),
    Flag("--client-rate", "messages a second one client may publish, in bursts of up to 2N; a client over it "
         "is closed with 3009 \"Too many messages\"; 0: no limit", "%g" % DEFAULTS.client_rate,
         rate(0.5, MOST_A_SECOND), "N"),
    Flag("--max-message-size", "largest websocket frame or send request a client may send, and largest "
         "message the room keeps and sends, as its JSON text with SockJS's escapes (an emoji is 12 bytes); "
         "a client over it is closed, a publish over it answers 413", str(DEFAULTS.max_message_size),
         size(1, 64 << 20), "SIZE"),
    Flag("--max-buffer", "unsent bytes allowed per connection before it is closed as a slow consumer",
         str(DEFAULTS.max_buffer), size(1 << 10, 1 << 30), "SIZE"),
    Flag("--write-timeout", "a streaming client or websocket that has not taken its pending bytes within this "
         "long of a message without a key (?key=) waiting is closed as a slow consumer; one waiting for "
         "conflated values only, after taking nothing for four times this long", "%g" % DEFAULTS.write_timeout,
         TIMER, "SECONDS"),
    Flag("--send-buffer", "kernel send buffer of each connection (Linux doubles it); what a client has not "
         "read beyond it waits under --max-buffer and --write-timeout. 0 leaves it to the kernel, which lets "
         "each client that stops reading hold up to net.ipv4.tcp_wmem's maximum (4 MiB) before the broker "
         "notices", str(DEFAULTS.send_buffer), size(1 << 10, 64 << 20, off=True), "SIZE"),
    Flag("--max-connections", "open TCP connections (HTTP and websocket) allowed, and as many polling and "
         "streaming sessions; more are answered 503 and closed (a session: closed as it opens); auto is the "
         "open-files limit less 2%% (at least 64) kept for the broker's own files; range: auto, or "
         + _CONNECTIONS.range, "auto", _max_connections,
         "N"),
    Flag("--max-connections-per-ip", "open TCP connections allowed per client address (IPv6: per /64), and "
         "as many polling and streaming sessions; more are refused as --max-connections says; 0 for no limit",
         str(DEFAULTS.max_connections_per_ip), count(1, CONNECTIONS, off=True), "N"),
    Flag("--max-accept-rate", "new sessions a second, in bursts of up to N; over it, /info and the request "
         "that would open a session (a websocket's handshake included) are answered 503 with Retry-After, "
         "before any work; 0 for no limit", "%g" % DEFAULTS.max_accept_rate, rate(0.001, MOST_A_SECOND), "N"),
    Flag("--client-address-header", "behind a proxy: the request header holding the client's address "
         "(X-Forwarded-For: its last address; X-Real-IP), for the per-IP limit; set it only if every request "
         "comes through a proxy that sets it", type=_header_name, metavar="NAME",
         shown="none: the peer's address"),
    Flag("--trusted-proxies", "comma-separated addresses or networks of the proxies whose "
         "--client-address-header is believed; a request from any other peer counts as its own address, "
         "whatever its headers say", ",".join(DEFAULTS.trusted_proxies), _networks, "NETWORKS"),
    Flag("--header-timeout", "time a connection has to send a request's complete headers, from its opening "
         "or from its previous response: closes half-sent headers and idle keep-alive connections",
         "%g" % DEFAULTS.header_timeout, TIMER, "SECONDS"),
    Flag("--body-timeout", "time a request has to send its whole body once its headers are in",
         "%g" % DEFAULTS.body_timeout, TIMER, "SECONDS"),
    Flag("--ws-ping-interval", "ping every websocket this often, 0 for never", "%g" % DEFAULTS.ws_ping_interval,
         TIMER_OR_NEVER, "SECONDS"),
    Flag("--ws-ping-timeout", "close a websocket whose answer to a ping is this late (at most the interval: a "
         "longer timeout is cut to it)", "%g" % DEFAULTS.ws_ping_timeout, TIMER, "SECONDS"),
    Flag("--heartbeat-delay", "send every SockJS session a heartbeat frame this often, so that proxies keep "
         "quiet connections open", "%g" % DEFAULTS.heartbeat_delay, TIMER, "SECONDS"),
    Flag("--disconnect-delay", "close a polling or streaming session this long after its last request ended "
         "(SockJS's disconnect_delay): a polling client has this long between polls, a stream's client this "
         "long to open the next one; its messages wait for it meanwhile", "%g" % DEFAULTS.disconnect_delay,
         TIMER, "SECONDS"),
    Flag("--drain-seconds", "on SIGTERM, SIGINT or POST /admin/drain: answer /healthz and every request "
         "that would open a session with 503 (a proxy asks another broker), and close the clients with 3012 "
         "\"Server draining: reconnect\" spread evenly "
         "over this long, then exit; a second signal closes the rest at once; 0 closes everyone at once. With "
         "--redis, a broker holding more than the room's clients per broker closes them at that share's rate, "
         "over up to twice this long",
         "%g" % DEFAULTS.drain_seconds, TIMER_OR_NEVER, "SECONDS"),
    Flag("--max-connection-age", "close a connection this old with 3012 \"Server draining: reconnect\", at a "
         "moment drawn within 10%% of it, so that its client reconnects through the proxy and brokers added "
         "later get their share; 0: never", "%g" % DEFAULTS.max_connection_age, LONG_OR_NEVER, "SECONDS"),
    Flag("--certfile", "serve https and wss with this PEM certificate (its chain after it); "
         "without it, plain http", metavar="PEM"),
    Flag("--keyfile", "the certificate's private key (PEM), when it is not in --certfile", metavar="PEM"),
    Flag("--warm-up-sessions", "before listening, open this many sessions (every transport in turn) on a room and "
         "a loopback port of the broker's own, each sending a message unless --no-client-publish (or a "
         "--max-message-size under 15 bytes), so that PyPy has compiled session opening, sends and "
         "broadcasts before the first clients arrive; at most 60 s; 0: none",
         str(DEFAULTS.warm_up), count(0, 100000), "SESSIONS", dest="warm_up", formerly="--warm-up"),
    Flag("--pypy-jit", "on PyPy, the JIT's parameters, as PyPy's --jit option takes them; without it, the "
         "broker sets " + pypy_environment.JIT_PARAMETERS + " (compiling sooner and in shorter traces than "
         "PyPy's defaults), unless the interpreter was given its own --jit; ignored on CPython", None,
         _jit_parameters, "PARAMETERS", shown="none: the broker's"),
    Flag("--log-level", "how much the broker logs", DEFAULTS.log_level, choices=("debug", "info", "warning", "error")),
)


def program(argv0=None):
    """:data:`COMMAND` when ``argv0`` (default ``sys.argv[0]``) is that command, else :data:`PROGRAM`."""
    return COMMAND if os.path.basename(sys.argv[0] if argv0 is None else argv0) == COMMAND else PROGRAM


def build_parser(environ=os.environ):
    parser = Parser(
        prog=program(),
        description="SockJS broadcast broker: every message reaches every connected client. "
        "Each flag's default comes from the environment variable named in its help.",
    )
    parser.add_argument("--version", action="version", version="sockjs-broker %s" % broker.__version__)
    Environment(ENVIRONMENT_PREFIX, environ).add_flags(parser, FLAGS)
    return parser


def parse_args(argv=None, environ=os.environ):
    """The :class:`Config` for ``argv`` (default ``sys.argv[1:]``) and ``environ``."""
    parser = build_parser(environ)
    config = Config(**vars(parser.parse_args(argv)))
    misread = Environment(ENVIRONMENT_PREFIX, environ).misread(FLAGS)
    if misread is not None:
        parser.error(misread)
    if config.keyfile is not None and config.certfile is None:
        parser.error("%s needs %s" % (flag_named("--keyfile"), flag_named("--certfile")))
    if config.private_rooms and config.token_secret is None and config.token_public_key is None:
        parser.error("%s needs %s or %s: nothing could sign its tokens" % (
            flag_named("--private-rooms"), flag_named("--token-secret"), flag_named("--token-public-key")))
    if config.admin_token is not None and config.admin_token in (config.publish_token or "").split(" "):
        parser.error("%s must not be the publish token: a backend that may publish could stop brokers"
                     % flag_named("--admin-token"))
    return config


def flag_named(name):
    """``--redis (BROKER_REDIS)``: a flag, and its variable, as a refusal at start names them."""
    return "%s (%s)" % (name, variable(ENVIRONMENT_PREFIX, name))


def refuse_at_start(reason):
    """Stop the broker as it starts, for a setting that cannot work: ``reason`` on
    one line, as argparse refuses a flag, and :data:`CONFIGURATION_ERROR`."""
    print("%s: error: %s" % (program(), one_line(reason)), file=sys.stderr)
    raise SystemExit(CONFIGURATION_ERROR)
