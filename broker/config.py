"""Settings from command-line flags, each with an environment variable as its default."""

import argparse
import dataclasses
import os
import re
from typing import Optional, Tuple

import broker
from broker.core import origins

_SIZE = re.compile(r"^\s*(\d+)\s*(|b|k|kb|kib|m|mb|mib)\s*$", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20}


@dataclasses.dataclass(frozen=True)
class Config:
    host: str = "127.0.0.1"
    port: int = 8080
    prefix: str = "/broadcast"
    publish_token: Optional[str] = None
    replay: int = 0
    redis: Optional[str] = None
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
    header_timeout: float = 20.0
    body_timeout: float = 20.0
    ws_ping_interval: float = 25.0
    ws_ping_timeout: float = 20.0
    heartbeat_delay: float = 25.0
    drain_seconds: float = 10.0
    log_level: str = "info"

    @property
    def url(self):
        return http_url(self.host, self.port, self.prefix)


def http_url(host, port, path):
    """``http://host:port/path``, with an IPv6 host in brackets."""
    return "http://%s:%d%s" % ("[%s]" % host if ":" in host else host, port, path)


def parse_size(text):
    """``65536``, ``64KiB``, ``1M``: a byte count (K and M are powers of 1024)."""
    match = _SIZE.match(text)
    if not match:
        raise argparse.ArgumentTypeError("not a size: %r (try 65536, 64KiB or 1MiB)" % text)
    return int(match.group(1)) * _UNITS[match.group(2).lower()]


def _prefix(text):
    if not re.match(r"^(/[A-Za-z0-9_.~-]+)+$", text):
        raise argparse.ArgumentTypeError("prefix must look like /broadcast, got %r" % text)
    return text


def _redis_url(text):
    if not re.match(r"^(rediss?|unix)://\S+$", text):
        raise argparse.ArgumentTypeError("not a Redis URL: %r (try redis://127.0.0.1:6379/0)" % text)
    return text


def _max_connections(text):
    if text.strip().lower() == "auto":
        return None
    value = _non_negative(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be 1 or more, or auto")
    return value


def _seconds(text):
    """A number of seconds, more than 0 and finite."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("not a number of seconds: %r" % text) from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError("must be more than 0 seconds, got %r" % text)
    return value


def _zero_or_more(text):
    """A finite number of 0 or more: seconds or a rate, where 0 means never or no limit."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("not a number: %r" % text) from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError("must be 0 or more, got %r" % text)
    return value


def _header_name(text):
    if not re.match(r"^[A-Za-z0-9-]+$", text):
        raise argparse.ArgumentTypeError("not a header name: %r" % text)
    return text


def _non_negative(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("not a whole number: %r" % text) from None
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more, got %d" % value)
    return value


def _origins(text):
    listed = tuple(part.strip() for part in text.split(",") if part.strip())
    try:
        origins.OriginPolicy(listed)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return listed


def _flag(text):
    return text.strip().lower() in ("1", "true", "yes", "on")


def build_parser(environ=os.environ):
    env = environ.get
    defaults = Config()
    # argparse applies each flag's type to a string default, so a bad environment
    # value is reported like a bad flag.
    parser = argparse.ArgumentParser(
        prog="python -m broker",
        description="SockJS broadcast broker: every message reaches every connected client. "
        "Each flag's default comes from the environment variable named in its help.",
    )
    parser.add_argument("--version", action="version", version="sockjs-broker %s" % broker.__version__)
    parser.add_argument("--host", default=env("BROKER_HOST", defaults.host),
                        help="address to listen on [BROKER_HOST, default %(default)s]")
    parser.add_argument("--port", type=int, default=env("BROKER_PORT", str(defaults.port)),
                        help="port to listen on, 0 for any free port [BROKER_PORT, default %(default)s]")
    parser.add_argument("--prefix", type=_prefix, default=env("BROKER_PREFIX", defaults.prefix),
                        help="URL prefix of the SockJS service [BROKER_PREFIX, default %(default)s]")
    parser.add_argument("--publish-token", default=env("BROKER_PUBLISH_TOKEN") or None,
                        help="bearer token for POST /publish; without one the endpoint is "
                        "disabled; prefer the environment, flags show in ps [BROKER_PUBLISH_TOKEN]")
    parser.add_argument("--replay", type=_non_negative, metavar="N",
                        default=env("BROKER_REPLAY", str(defaults.replay)),
                        help="send each new subscriber the last N messages first; 1 suits a "
                        "live counter [BROKER_REPLAY, default %(default)s]")
    parser.add_argument("--redis", type=_redis_url, metavar="URL", default=env("BROKER_REDIS") or None,
                        help="join a cluster: every message goes through the room's stream in this "
                        "Redis (redis://host:port/db), and every broker of the cluster delivers "
                        "it in the stream's order [BROKER_REDIS, default none: one process]")
    parser.add_argument("--no-client-publish", dest="client_publish", action="store_false",
                        default=not _flag(env("BROKER_NO_CLIENT_PUBLISH", "")),
                        help="feed mode: clients only listen, backends publish over HTTP "
                        "[BROKER_NO_CLIENT_PUBLISH=1]")
    parser.add_argument("--allowed-origins", type=_origins, metavar="ORIGINS",
                        default=env("BROKER_ALLOWED_ORIGINS", ",".join(defaults.allowed_origins)),
                        help="comma-separated origins (https://example.com) whose pages may use the "
                        "broker, or * for any; others get 403 on websockets and no CORS answer "
                        "[BROKER_ALLOWED_ORIGINS, default %(default)s]")
    parser.add_argument("--client-rate", type=_zero_or_more, metavar="N",
                        default=env("BROKER_CLIENT_RATE", "%g" % defaults.client_rate),
                        help="messages a second one client may publish, in bursts of up to 2N; a "
                        "client over it is closed with 3009 \"Too many messages\"; 0: no limit "
                        "[BROKER_CLIENT_RATE, default %(default)s]")
    parser.add_argument("--max-message-size", type=parse_size, metavar="SIZE",
                        default=env("BROKER_MAX_MESSAGE_SIZE", str(defaults.max_message_size)),
                        help="largest websocket frame or send request a client may send; a "
                        "larger one closes that session [BROKER_MAX_MESSAGE_SIZE, default %(default)s]")
    parser.add_argument("--max-buffer", type=parse_size, metavar="SIZE",
                        default=env("BROKER_MAX_BUFFER", str(defaults.max_buffer)),
                        help="unsent bytes allowed per connection before it is closed as a slow "
                        "consumer [BROKER_MAX_BUFFER, default %(default)s]")
    parser.add_argument("--write-timeout", type=_seconds, metavar="SECONDS",
                        default=env("BROKER_WRITE_TIMEOUT", "%g" % defaults.write_timeout),
                        help="a websocket that has not taken its pending bytes for this long is "
                        "closed as a slow consumer [BROKER_WRITE_TIMEOUT, default %(default)s]")
    parser.add_argument("--send-buffer", type=parse_size, metavar="SIZE",
                        default=env("BROKER_SEND_BUFFER", str(defaults.send_buffer)),
                        help="kernel send buffer of each connection (Linux doubles it); what a "
                        "client has not read beyond it waits under --max-buffer and "
                        "--write-timeout. 0 leaves it to the kernel, which lets each client "
                        "that stops reading hold up to net.ipv4.tcp_wmem's maximum (4 MiB) "
                        "before the broker notices [BROKER_SEND_BUFFER, default %(default)s]")
    parser.add_argument("--max-connections", type=_max_connections, metavar="N",
                        default=env("BROKER_MAX_CONNECTIONS", "auto"),
                        help="open TCP connections (HTTP and websocket) allowed, and as many "
                        "polling and streaming sessions; more are answered 503 and closed "
                        "(a session: closed as it opens); auto is the open-files limit less 2%% "
                        "(at least 64) kept for the broker's own files "
                        "[BROKER_MAX_CONNECTIONS, default auto]")
    parser.add_argument("--max-connections-per-ip", type=_non_negative, metavar="N",
                        default=env("BROKER_MAX_CONNECTIONS_PER_IP", str(defaults.max_connections_per_ip)),
                        help="open TCP connections allowed per client address (IPv6: per /64), "
                        "and as many polling and streaming sessions; more are refused as "
                        "--max-connections says; 0 for no limit "
                        "[BROKER_MAX_CONNECTIONS_PER_IP, default %(default)s]")
    parser.add_argument("--max-accept-rate", type=_zero_or_more, metavar="N",
                        default=env("BROKER_MAX_ACCEPT_RATE", "%g" % defaults.max_accept_rate),
                        help="new sessions a second, in bursts of up to N; over it, /info and the "
                        "request that would open a session (a websocket's handshake included) are "
                        "answered 503 with Retry-After, before any work; 0 for no limit "
                        "[BROKER_MAX_ACCEPT_RATE, default %(default)s]")
    parser.add_argument("--client-address-header", type=_header_name, metavar="NAME",
                        default=env("BROKER_CLIENT_ADDRESS_HEADER") or None,
                        help="behind a proxy: the request header holding the client's address "
                        "(X-Forwarded-For: its last address; X-Real-IP), for the per-IP limit; "
                        "set it only if every request comes through a proxy that sets it "
                        "[BROKER_CLIENT_ADDRESS_HEADER, default none: the peer's address]")
    parser.add_argument("--header-timeout", type=_seconds, metavar="SECONDS",
                        default=env("BROKER_HEADER_TIMEOUT", str(defaults.header_timeout)),
                        help="time a connection has to send a request's complete headers, from "
                        "its opening or from its previous response: closes half-sent headers "
                        "and idle keep-alive connections [BROKER_HEADER_TIMEOUT, default %(default)s]")
    parser.add_argument("--body-timeout", type=_seconds, metavar="SECONDS",
                        default=env("BROKER_BODY_TIMEOUT", str(defaults.body_timeout)),
                        help="time a request has to send its whole body once its headers are in "
                        "[BROKER_BODY_TIMEOUT, default %(default)s]")
    parser.add_argument("--ws-ping-interval", type=_zero_or_more, metavar="SECONDS",
                        default=env("BROKER_WS_PING_INTERVAL", str(defaults.ws_ping_interval)),
                        help="ping every websocket this often, 0 for never "
                        "[BROKER_WS_PING_INTERVAL, default %(default)s]")
    parser.add_argument("--ws-ping-timeout", type=_seconds, metavar="SECONDS",
                        default=env("BROKER_WS_PING_TIMEOUT", str(defaults.ws_ping_timeout)),
                        help="close a websocket whose answer to a ping is this late (at most the "
                        "interval: a longer timeout is cut to it) [BROKER_WS_PING_TIMEOUT, "
                        "default %(default)s]")
    parser.add_argument("--heartbeat-delay", type=_seconds, metavar="SECONDS",
                        default=env("BROKER_HEARTBEAT_DELAY", str(defaults.heartbeat_delay)),
                        help="send every SockJS session a heartbeat frame this often, so that "
                        "proxies keep quiet connections open [BROKER_HEARTBEAT_DELAY, default "
                        "%(default)s]")
    parser.add_argument("--drain-seconds", type=_zero_or_more, metavar="SECONDS",
                        default=env("BROKER_DRAIN_SECONDS", "%g" % defaults.drain_seconds),
                        help="on SIGTERM, SIGINT or POST /admin/drain: answer /healthz with 503, close "
                        "new sessions as they open, and close the clients with 3012 \"Server draining: "
                        "reconnect\" spread evenly over this long, then exit; a second signal closes the "
                        "rest at once; 0 closes everyone at once [BROKER_DRAIN_SECONDS, default %(default)s]")
    parser.add_argument("--log-level", choices=["debug", "info", "warning", "error"],
                        default=env("BROKER_LOG_LEVEL", defaults.log_level),
                        help="[BROKER_LOG_LEVEL, default %(default)s]")
    return parser


def parse_args(argv=None, environ=os.environ):
    """The :class:`Config` for ``argv`` (default ``sys.argv[1:]``) and ``environ``."""
    args = build_parser(environ).parse_args(argv)
    return Config(**vars(args))
