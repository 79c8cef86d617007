"""Where a SockJS client connects: the service's address, its session paths, websocket endpoints.

Rules (SockJS protocol 0.3.3): a session lives at ``<prefix>/<server>/<session>/``,
``<server>`` three digits and ``<session>`` a random string, each transport a
suffix below it (``websocket``, ``xhr``, ``xhr_streaming``, ...); the raw
websocket, without SockJS framing, is ``<prefix>/websocket``.

A service's URL (``http://127.0.0.1:8080/broadcast``) is parsed here and only
here, once (:func:`target`); everything else asks its :class:`Target`.
"""

import dataclasses
import functools
import random
import string
import urllib.parse

SESSION_CHARACTERS = string.ascii_lowercase + string.digits


@dataclasses.dataclass(frozen=True)
class Target:
    """A SockJS service: ``host`` and ``port`` to connect to, the ``prefix`` of its paths."""

    host: str
    port: int
    prefix: str

    @property
    def netloc(self):
        """``host:port``, an IPv6 host in brackets: the Host header, and a server's label."""
        return "%s:%d" % ("[%s]" % self.host if ":" in self.host else self.host, self.port)

    def url_of(self, path):
        """``http://host:port`` and ``path``: ``target.url_of("/stats")``."""
        return "http://%s%s" % (self.netloc, path)


@functools.lru_cache(maxsize=None)
def target(url):
    """The :class:`Target` of a service's URL, ``http://host[:port]/prefix``."""
    parts = urllib.parse.urlsplit(url)
    return Target(parts.hostname, parts.port or 80, parts.path.rstrip("/"))


def session_path(url):
    """A new session's path ``<prefix>/<server>/<session>`` under the SockJS prefix ``url``."""
    prefix = target(url).prefix
    server = "%03d" % random.randrange(1000)
    session = "".join(random.choice(SESSION_CHARACTERS) for _ in range(12))
    return "%s/%s/%s" % (prefix, server, session)


def endpoint_path(url, transport):
    """The websocket path for ``transport`` (``sockjs`` or ``raw``) under the SockJS prefix ``url``."""
    if transport == "raw":
        return target(url).prefix + "/websocket"
    return session_path(url) + "/websocket"
