"""Connection accounting: how many TCP connections are open, and from whom.

Rules this module keeps:

* A connection is a TCP connection, that is a file descriptor: an HTTP
  keep-alive connection, a streaming response or a websocket. SockJS sessions
  are not connections here (a polling session holds none between requests).
* ``admit`` counts a new connection or says why it is refused: the broker is
  at ``max_connections``, or its client is at ``max_per_client``. Each refusal
  is counted by that reason; a refused connection is never counted as open.
* Every admitted connection is released exactly once, with the client it is
  attributed to at that moment.
* A client is an address: IPv4 as it is, an IPv4-mapped IPv6 address as its
  IPv4 address, any other IPv6 address by its /64 (one subscriber's network:
  a single host may hold all of it). ``None`` is a client not known yet, as
  behind a proxy until a request names it (see ``reassign``).
* Without a per-client limit nothing is kept per client.
* The default ``max_connections`` leaves part of the open-files limit to the
  broker's own descriptors (event loop, listening sockets, log, a static file
  being sent on an open connection), so connections are refused with an
  answer before accept() itself fails.

No socket, no HTTP: the listener (``broker.listener``) drives it.
"""

import ipaddress

MAX_CONNECTIONS = "max_connections"
PER_IP = "per_ip"
RESERVED_DESCRIPTORS = 64


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
    """The open connections, against ``max_connections`` in all and
    ``max_per_client`` per client (0: no per-client limit)."""

    def __init__(self, max_connections, max_per_client=0):
        self.max_connections = max_connections
        self.max_per_client = max_per_client
        self.open = 0
        self.admitted = 0  # in all, since the start: the collector watches both
        self.released = 0
        self.per_client = {}
        self.refused = {MAX_CONNECTIONS: 0, PER_IP: 0}
        self.accept_pauses = 0  # counted by the listener, shown with the rest

    def admit(self, client):
        """Count a new connection from ``client``; None, or the reason it is refused."""
        if self.open >= self.max_connections:
            return self._refuse(MAX_CONNECTIONS)
        if client is not None and self.max_per_client:
            held = self.per_client.get(client, 0)
            if held >= self.max_per_client:
                return self._refuse(PER_IP)
            self.per_client[client] = held + 1
        self.open += 1
        self.admitted += 1
        return None

    def reassign(self, old, new):
        """Attribute an open connection of client ``old`` to client ``new``
        instead; None, or the reason it is refused (it then stays ``old``'s)."""
        if new == old or not self.max_per_client:
            return None
        if new is not None:
            held = self.per_client.get(new, 0)
            if held >= self.max_per_client:
                return self._refuse(PER_IP)
            self.per_client[new] = held + 1
        self._forget(old)
        return None

    def release(self, client):
        """An admitted connection of ``client`` has closed."""
        self.open -= 1
        self.released += 1
        if self.max_per_client:
            self._forget(client)

    def stats(self):
        return {
            "tcp_connections": self.open,
            "refused": dict(self.refused),
            "accept_pauses": self.accept_pauses,
        }

    def _refuse(self, reason):
        self.refused[reason] += 1
        return reason

    def _forget(self, client):
        if client is None:
            return
        held = self.per_client[client] - 1
        if held:
            self.per_client[client] = held
        else:
            del self.per_client[client]
