"""TLS on the broker's own port: https and wss without a proxy in front.

Rules this module keeps:

* One server context for the process (:func:`server_context`), made at start
  from ``--certfile`` and ``--keyfile``: TLS 1.2 or newer, no renegotiation
  (a client cannot make a write wait for a read: OpenSSL 3 refuses a client's
  by default, and the option says so where Python names it, which PyPy 3.9
  does not), ``http/1.1`` offered by ALPN, since the broker speaks nothing else.
* An accepted connection is wrapped before anything is read from it
  (:func:`wrap`); the handshake happens on the stream's first read, within
  the header timeout, like a slow request's headers.
* A socket the broker writes itself (:mod:`broker.transports.owned_socket`)
  goes through :func:`send_backlog`: TLS cannot take a list of buffers
  (``sendmsg``), so the backlog's head is joined into one buffer of at most
  ``JOINED`` bytes, which then stays the head until the kernel has taken all
  of it. OpenSSL asks that a write that could not finish be retried with the
  same bytes first; a joined head is a new object, which conflation never
  replaces (:mod:`broker.core.conflation`).
* "Not now" from TLS (``SSLWantReadError``, ``SSLWantWriteError``) is
  :data:`WOULD_BLOCK`, like ``BlockingIOError``; every other ``SSLError`` is
  an ``OSError`` that ends the connection.
"""

import ssl

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
    """The TLS socket of an accepted ``connection``, its handshake still to come."""
    return context.wrap_socket(connection, server_side=True, do_handshake_on_connect=False)


def send_backlog(sock, backlog):
    """Send the head of ``backlog`` (a list of buffers) on ``sock``, a TLS
    socket, joined first (:func:`join_head`); returns the bytes sent."""
    return sock.send(join_head(backlog))


def join_head(backlog):
    """Join the buffers at the head of ``backlog``, in place, into one of at
    least ``JOINED`` bytes where there are so many, and return it. A head
    already that large is left as it is: it may be a write TLS must retry."""
    size = len(backlog[0])
    count = 1
    while count < len(backlog) and size < JOINED:
        size += len(backlog[count])
        count += 1
    if count > 1:
        backlog[:count] = [b"".join(backlog[:count])]
    return backlog[0]
