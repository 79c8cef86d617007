"""TLS on the broker's own port: https and wss without a proxy in front.

Rules this module keeps:

* One server context for the process (:func:`server_context`), made at start
  from ``--certfile`` and ``--keyfile``: TLS 1.2 or newer, no renegotiation
  (a client cannot make a write wait for a read: OpenSSL 3 refuses a client's
  by default, and the option says so where Python names it, which PyPy 3.9
  does not), ``http/1.1`` offered by ALPN, since the broker speaks nothing else.
* An accepted connection is wrapped before anything is read from it
  (:func:`wrap`); the handshake happens on the stream's first read, within
  the header timeout, like a slow request's headers. One its client has
  reset already is refused with an ``OSError``, the socket still the
  caller's to close: Python's wrap, finding it so, raises having taken the
  descriptor into a TLS socket the caller never gets, which only the
  collector closes (at once on CPython, at its next pass on PyPy), so
  :func:`wrap` asks first; a reset that arrives between the two costs that.
* A socket the broker writes itself (:mod:`broker.transports.owned_socket`)
  goes through :func:`send_backlog`: TLS cannot take a list of buffers
  (``sendmsg``), so the backlog's head is joined into one buffer of at least
  ``JOINED`` bytes where there are so many, which then stays the head until
  the kernel has taken all of it. OpenSSL asks that a write that could not
  finish be retried with the same bytes first: the head handed to TLS is
  always a new object, joined or a view of the item, which conflation never
  finds and so never replaces (:mod:`broker.core.conflation`).
* "Not now" from TLS (``SSLWantReadError``, ``SSLWantWriteError``) is
  :data:`WOULD_BLOCK`, like ``BlockingIOError``; every other ``SSLError`` is
  an ``OSError`` that ends the connection.
* A failed handshake (a scanner, plain HTTP on the TLS port, a client that
  does not trust the certificate, one that resets its connection before the
  handshake) costs no log line: Tornado's warning for each is counted by
  :class:`HandshakeFailures` instead, with the connections the listener lost
  before the handshake began (:meth:`HandshakeFailures.lost`), shown in
  ``/stats``, and logged at debug level only.
"""

import logging
import ssl

from broker import _internals
from broker.core import figures
from broker.core.figures import Figure

# Joined per write: a few TLS records, as much as a send buffer takes at once.
JOINED = 64 * 1024

WOULD_BLOCK = (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError)


def server_context(certfile, keyfile=None):
    """The context serving ``certfile`` (PEM, the chain after the certificate)
    with ``keyfile`` (PEM; None: the key is in ``certfile``). Raises OSError or
    ``ssl.SSLError`` when they cannot be read or do not match."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.options |= getattr(ssl, "OP_NO_RENEGOTIATION", 0)
    context.set_alpn_protocols(["http/1.1"])
    context.load_cert_chain(certfile, keyfile)
    return context


def wrap(context, connection):
    """The TLS socket of an accepted ``connection``, its handshake still to
    come. Raises ``OSError`` (``ssl.SSLError`` included) if the client is gone
    already; ``connection`` is then the caller's to close (a no-op if Python's
    wrap had taken its descriptor)."""
    connection.getpeername()  # ENOTCONN once reset: raised here, the descriptor still the caller's
    return context.wrap_socket(connection, server_side=True, do_handshake_on_connect=False)


def send_backlog(sock, backlog):
    """Send the head of ``backlog`` (a list of buffers) on ``sock``, a TLS
    socket, joined first (:func:`join_head`); returns the bytes sent."""
    return sock.send(join_head(backlog))


def join_head(backlog):
    """Join the buffers at the head of ``backlog``, in place, into one of at
    least ``JOINED`` bytes where there are so many, and return it: a new
    object in either case (a head already that large becomes a view of
    itself), so that no queued item TLS may have to write again is one that
    conflation could replace."""
    size = len(backlog[0])
    count = 1
    while count < len(backlog) and size < JOINED:
        size += len(backlog[count])
        count += 1
    backlog[:count] = [b"".join(backlog[:count]) if count > 1 else memoryview(backlog[0])]
    return backlog[0]


class HandshakeFailures(logging.Filter):
    """On Tornado's logger: counts the failed TLS handshakes it would log one by one."""

    def __init__(self):
        super().__init__()
        self.count = 0

    def lost(self):
        """A connection was lost before its handshake began."""
        self.count += 1

    def filter(self, record):
        if not _internals.is_tls_handshake_failure(record):
            return True
        self.count += 1
        return logging.getLogger("broker").isEnabledFor(logging.DEBUG)

    def stats(self):
        return figures.stats_of(self)

    FIGURES = (Figure("handshake_failures", "count"),)
