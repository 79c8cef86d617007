"""Connection accounting: how many TCP connections are open, and from whom.

Rules this module keeps:

* A connection is a TCP connection, that is a file descriptor: an HTTP
  keep-alive connection, a streaming response or a websocket.
* ``admit`` counts a new connection or says why it is refused: the broker is
  at ``max_connections``, or its client is at ``max_per_client``. Each refusal
  is counted by that reason; a refused connection is never counted as open.
* Every admitted connection is released exactly once, with the client it is
  attributed to at that moment.
* A SockJS session of a polling or streaming transport is counted apart
  (``admit_session``), against the same two numbers: it is a subscriber
  like a websocket, but holds no connection between its requests, so
  without a count of its own one client could open thousands of them over
  one keep-alive connection, each to be sent every message until it
  expires. Sessions are refused and released as connections are.
* A client is an address: IPv4 as it is, an IPv4-mapped IPv6 address as its
  IPv4 address, any other IPv6 address by its /64 (one subscriber's network:
  a single host may hold all of it). ``None`` is a client not known yet, as
  behind a proxy until a request names it (see ``reassign``). Only a peer in
  :class:`TrustedProxies` may name another client; any other peer is its own
  address, whatever its headers say.
* Without a per-client limit nothing is kept per client.
* New sessions arrive at most ``accept_rate`` a second, in bursts of at most
  as many (a token bucket; 0: no limit): ``admit_new_session`` takes a token
  for a request that opens a session, or only checks that one is there (SockJS's
  ``/info``, which comes first: a client let through it then finds its
  token), and answers how long to wait when there is none. It is asked before
  anything of the session is made, and counted as ``accept_rate`` refusals.
* The default ``max_connections`` leaves part of the open-files limit to the
  broker's own descriptors (event loop, listening sockets, log, a static file
  being sent on an open connection), so connections are refused with an
  answer before accept() itself fails.

No socket, no HTTP: the listener (``broker.transports.listener``) drives it.
"""

import ipaddress

from broker.core import figures
from broker.core.figures import COUNTER, GAUGE, Figure, Metric
from broker.core.token_bucket import TokenBucket

MAX_CONNECTIONS = "max_connections"
PER_IP = "per_ip"
MAX_SESSIONS = "max_sessions"
SESSIONS_PER_IP = "sessions_per_ip"
ACCEPT_RATE = "accept_rate"
RESERVED_DESCRIPTORS = 64


class TrustedProxies:
    """The peers whose requests may name their client in a ``header``: ``networks``, each an
    address or a network (``127.0.0.0/8``, ``10.1.2.3``, ``::1``); ValueError for another text."""

    def __init__(self, networks, header=None):
        self.networks = [ipaddress.ip_network(text.strip(), strict=False) for text in networks]
        self.header = header

    def trusts(self, address):
        """Whether the peer at ``address`` is one of them (an IPv4-mapped address as its IPv4)."""
        try:
            ip = ipaddress.ip_address(address.strip())
        except ValueError:
            return False
        if ip.version == 6 and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        return any(ip in network for network in self.networks)


def default_max_connections(open_files):
    """The open-files limit less 2 %, and less at least ``RESERVED_DESCRIPTORS``."""
    return max(1, open_files - max(RESERVED_DESCRIPTORS, open_files // 50))


def client_key(address):
    """The client an address belongs to (see the rules above); None if
    ``address`` is not an IP address."""
    try:
        ip = ipaddress.ip_address(address.strip())
    except ValueError:
        return None
    if ip.version == 6:
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


class Limits:
    """The open connections and the polling and streaming sessions, each
    against ``max_connections`` in all and ``max_per_client`` per client
    (0: no per-client limit); new sessions against ``accept_rate`` a second
    (0: no limit)."""

    def __init__(self, max_connections, max_per_client=0, accept_rate=0):
        self.max_connections = max_connections
        self.max_per_client = max_per_client
        self.open = 0
        self.admitted = 0  # in all, since the start: the collector watches both
        self.released = 0
        self.per_client = {}
        self.sessions = 0
        self.sessions_per_client = {}
        self.refused = {MAX_CONNECTIONS: 0, PER_IP: 0, MAX_SESSIONS: 0, SESSIONS_PER_IP: 0, ACCEPT_RATE: 0}
        self.accept_pauses = 0  # counted by the listener, shown with the rest
        self.new_sessions = TokenBucket(accept_rate, max(1.0, accept_rate), 0.0) if accept_rate else None

    def admit(self, client):
        """Count a new connection from ``client``; None, or the reason it is refused."""
        if self.open >= self.max_connections:
            return self._refuse(MAX_CONNECTIONS)
        if not self._hold(self.per_client, client):
            return self._refuse(PER_IP)
        self.open += 1
        self.admitted += 1
        return None

    def admit_session(self, client):
        """Count a new polling or streaming session of ``client``; None, or the reason it is refused."""
        if self.sessions >= self.max_connections:
            return self._refuse(MAX_SESSIONS)
        if not self._hold(self.sessions_per_client, client):
            return self._refuse(SESSIONS_PER_IP)
        self.sessions += 1
        return None

    def admit_new_session(self, now, take=True):
        """May a session open at ``now`` (seconds, any monotonic clock)? None,
        having taken a token if ``take``; or the seconds to wait for one."""
        bucket = self.new_sessions
        if bucket is None or (bucket.take(now) if take else not bucket.wait(now)):
            return None
        self._refuse(ACCEPT_RATE)
        return bucket.wait(now)

    def release_session(self, client):
        """An admitted session of ``client`` has closed."""
        self.sessions -= 1
        if self.max_per_client:
            self._forget(self.sessions_per_client, client)

    def reassign(self, old, new):
        """Attribute an open connection of client ``old`` to client ``new``
        instead; None, or the reason it is refused (it then stays ``old``'s)."""
        if new == old or not self.max_per_client:
            return None
        if not self._hold(self.per_client, new):
            return self._refuse(PER_IP)
        self._forget(self.per_client, old)
        return None

    def release(self, client):
        """An admitted connection of ``client`` has closed."""
        self.open -= 1
        self.released += 1
        if self.max_per_client:
            self._forget(self.per_client, client)

    def stats(self):
        return figures.stats_of(self)

    FIGURES = (
        Figure("tcp_connections", "open", Metric("tcp_connections", GAUGE, "Open TCP connections")),
        Figure(None, "max_connections", Metric("tcp_connections_limit", GAUGE, "TCP connections allowed "
                                               "(--max-connections)")),
        Figure("refused", lambda limits: dict(limits.refused),
               Metric("refused_connections", COUNTER, "TCP connections or requests refused with 503, and polling "
                      "or streaming sessions closed as they opened, by the limit reached", ("reason",))),
        Figure("accept_pauses", "accept_pauses", Metric("accept_pauses", COUNTER, "Times the broker stopped "
                                                        "accepting for a moment (out of descriptors)")),
    )

    def _refuse(self, reason):
        self.refused[reason] += 1
        return reason

    def _hold(self, counts, client):
        """Count one more for ``client`` in ``counts``; False if it is at the per-client limit."""
        if client is None or not self.max_per_client:
            return True
        held = counts.get(client, 0)
        if held >= self.max_per_client:
            return False
        counts[client] = held + 1
        return True

    def _forget(self, counts, client):
        if client is None:
            return
        held = counts[client] - 1
        if held:
            counts[client] = held
        else:
            del counts[client]
