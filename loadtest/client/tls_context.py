"""TLS for the load client's connections to an ``https`` service: what it trusts, one context per process.

Rules:

- A connection is TLS when its service's URL is ``https``: every place that opens a socket
  asks :func:`context_for` (None for a plain one). The sans-I/O protocols never know.
- What the client trusts is the process's: the system's certificate authorities, or only
  the PEM file handed to :func:`trust` (``--tls-ca``); a worker process trusts the same.
- The context is the standard library's default (certificate and host verified, TLS 1.2 or
  newer), offering ``http/1.1`` by ALPN; one per process and file.
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
    """The client context trusting ``ca_file`` (PEM) only, or the system's authorities when None."""
    context = ssl.create_default_context(cafile=ca_file)
    context.set_alpn_protocols(["http/1.1"])
    return context


def context_for(service):
    """The context of a connection to ``service`` (a Target): None unless it is TLS."""
    return client_context(_trusted[0]) if service.tls else None
