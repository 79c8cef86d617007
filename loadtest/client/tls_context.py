"""TLS for the load client's connections to an ``https`` service: what it trusts, one context per process.

Rules:

- A connection is TLS when its service's URL is ``https``
  (:attr:`loadtest.framing.endpoints.Target.tls`): every place that opens a socket
  to a service asks :func:`context_for`, which says None for a plain one, so the
  plain path is the one it always was. The sans-I/O protocols never know.
- What the client trusts is the process's, as the system's store is: the
  system's certificate authorities, or instead only the PEM file handed once to
  :func:`trust` (``--tls-ca``; ``compare --tls`` trusts the certificate it made).
  A worker process (:mod:`loadtest.client.workers`) is handed :func:`trusted`
  and trusts the same.
- The context is the standard library's default client context: the
  certificate and the host (an IP address against the certificate's
  addresses) are verified, TLS 1.2 or newer; it offers ``http/1.1`` by ALPN,
  the only protocol the client speaks. It is made once per process and file.
"""

import functools
import ssl

_trusted = [None]


def trust(ca_file):
    """Trust only the certificates in ``ca_file`` (PEM) from now on in this process; None: the system's."""
    _trusted[0] = ca_file


def trusted():
    """The file :func:`trust` was given, or None (the system's certificate authorities)."""
    return _trusted[0]


@functools.lru_cache(maxsize=None)
def client_context(ca_file=None):
    """The client context trusting ``ca_file`` (PEM) only, or the system's authorities when None;
    ``ssl.SSLError`` or OSError when the file cannot be read as certificates."""
    context = ssl.create_default_context(cafile=ca_file)
    context.set_alpn_protocols(["http/1.1"])
    return context


def context_for(service):
    """The context of a connection to ``service`` (a :class:`loadtest.framing.endpoints.Target`):
    None unless it is TLS."""
    return client_context(_trusted[0]) if service.tls else None
