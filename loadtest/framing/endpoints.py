"""Where a SockJS client connects: the service's address, its session paths, websocket endpoints.

Rules (SockJS protocol 0.3.3): a session lives at ``<prefix>/<server>/<session>/``,
``<server>`` three digits and ``<session>`` a random string, each transport a
suffix below it (``websocket``, ``xhr``, ``xhr_streaming``, ...); the raw
websocket, without SockJS framing, is ``<prefix>/websocket``.

A service's URL is parsed here only, once (:func:`target`). ``https`` means every connection is
TLS. Its query goes on every request of a session, as sockjs-client carries it.

The transports are named here, once (:data:`TRANSPORTS`, as sockjs-client names them, and
``raw``). A mix (``mix:websocket=70,xhr-streaming=30``, :func:`mix`) gives each client its
transport by the weights, deterministically by client id (:func:`client_transport`).
"""

import dataclasses
import functools
import math
import random
import string
import urllib.parse

SESSION_CHARACTERS = string.ascii_lowercase + string.digits
WEBSOCKET = "websocket"
RAW = "raw"
HTTP_TRANSPORTS = ("xhr-streaming", "eventsource", "htmlfile", "xhr-polling", "jsonp-polling")
TRANSPORTS = (WEBSOCKET,) + HTTP_TRANSPORTS + (RAW,)
MIX_PREFIX = "mix:"
# Client i of a mix draws frac(i * golden ratio): a low-discrepancy sequence, so
# every run of consecutive ids, however short, holds each transport close to its weight.
_GOLDEN = (math.sqrt(5) - 1) / 2


@dataclasses.dataclass(frozen=True)
class Target:
    """A SockJS service: ``host`` and ``port`` to connect to, the ``prefix`` of its paths, ``tls``."""

    host: str
    port: int
    prefix: str
    query: str = ""
    tls: bool = False

    @property
    def positions(self):
        """Whether the URL asks for position envelopes (``?positions=1``)."""
        return "positions" in urllib.parse.parse_qs(self.query, keep_blank_values=True)

    def with_query(self, path):
        return with_query(path, self.query)

    @property
    def netloc(self):
        """``host:port``, an IPv6 host in brackets: the Host header, and a server's label."""
        return "%s:%d" % ("[%s]" % self.host if ":" in self.host else self.host, self.port)

    def url_of(self, path):
        """``http://host:port`` (``https://`` over TLS) and ``path``: ``target.url_of("/stats")``."""
        return "%s://%s%s" % ("https" if self.tls else "http", self.netloc, path)


def with_query(path, query):
    """``path`` (a request's, perhaps with a query of its own) with ``query`` added, if any."""
    if not query:
        return path
    return path + ("&" if "?" in path else "?") + query


@functools.lru_cache(maxsize=None)
def target(url):
    """The :class:`Target` of a service's URL, ``http://host[:port]/prefix`` or ``https://...``."""
    parts = urllib.parse.urlsplit(url)
    tls = parts.scheme == "https"
    return Target(parts.hostname, parts.port or (443 if tls else 80), parts.path.rstrip("/"), parts.query, tls)


def session_path(url):
    """A new session's path ``<prefix>/<server>/<session>`` under the SockJS prefix ``url``."""
    prefix = target(url).prefix
    server = "%03d" % random.randrange(1000)
    session = "".join(random.choice(SESSION_CHARACTERS) for _ in range(12))
    return "%s/%s/%s" % (prefix, server, session)


def endpoint_path(url, transport):
    """The websocket path for ``transport`` (``websocket`` or ``raw``) under the SockJS prefix ``url``."""
    service = target(url)
    if transport == RAW:
        return service.with_query(service.prefix + "/websocket")
    return service.with_query(session_path(url) + "/websocket")


def mix(weights):
    """The transport of a mix: ``mix:websocket=70,xhr-polling=30`` of ``{transport: weight}``."""
    return MIX_PREFIX + ",".join("%s=%d" % item for item in weights.items())


@functools.lru_cache(maxsize=None)
def _mix_bounds(transport):
    """``[(upper bound in [0, 1], transport)]`` of a mix, in its order."""
    weights = [(name, int(weight)) for name, _, weight in
               (item.partition("=") for item in transport[len(MIX_PREFIX):].split(","))]
    total = sum(weight for _, weight in weights)
    bounds, reached = [], 0
    for name, weight in weights:
        reached += weight
        bounds.append((reached / total, name))
    return bounds


def client_transport(transport, client_id):
    """The transport client ``client_id`` uses: ``transport`` itself, or its share of a :func:`mix`."""
    if not transport.startswith(MIX_PREFIX):
        return transport
    draw = (client_id * _GOLDEN) % 1.0
    bounds = _mix_bounds(transport)
    for bound, name in bounds:
        if draw < bound:
            return name
    return bounds[-1][1]


def source_address(addresses, n):
    """Where connection ``n`` binds: ``(address, 0)`` from ``addresses`` in turn, or None (the kernel's choice)."""
    return (addresses[n % len(addresses)], 0) if addresses else None
