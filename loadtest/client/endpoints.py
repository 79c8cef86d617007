"""Where a SockJS client connects under a service's prefix: session paths, websocket endpoints.

Rules (SockJS protocol 0.3.3): a session lives at ``<prefix>/<server>/<session>/``,
``<server>`` three digits and ``<session>`` a random string, each transport a
suffix below it (``websocket``, ``xhr``, ``xhr_streaming``, ...); the raw
websocket, without SockJS framing, is ``<prefix>/websocket``.
"""

import random
import string
import urllib.parse

SESSION_CHARACTERS = string.ascii_lowercase + string.digits


def session_path(url):
    """A new session's path ``<prefix>/<server>/<session>`` under the SockJS prefix ``url``."""
    prefix = urllib.parse.urlsplit(url).path.rstrip("/")
    server = "%03d" % random.randrange(1000)
    session = "".join(random.choice(SESSION_CHARACTERS) for _ in range(12))
    return "%s/%s/%s" % (prefix, server, session)


def endpoint_path(url, transport):
    """The websocket path for ``transport`` (``sockjs`` or ``raw``) under the SockJS prefix ``url``."""
    if transport == "raw":
        return urllib.parse.urlsplit(url).path.rstrip("/") + "/websocket"
    return session_path(url) + "/websocket"
