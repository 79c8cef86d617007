"""A broker the tests started, as they speak to it: its SockJS URL, its HTTP requests, its ``/stats``.

The fixtures of ``tests/conftest.py`` start brokers and hand them out as :class:`RunningBroker`;
a module that shares one broker among its tests (a fixture of module scope) wraps the process it
launched the same way.
"""

import json
import urllib.error
import urllib.request


def http_request(url, method="GET", body=None, headers=None, context=None):
    """(status, parsed JSON or text body) of one HTTP request (``context``: an
    ``ssl.SSLContext`` for https)."""
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=5, context=context) as response:
            status, data, ctype = response.status, response.read(), response.headers
    except urllib.error.HTTPError as error:
        status, data, ctype = error.code, error.read(), error.headers
    if ctype.get("Content-Type", "").startswith("application/json"):
        return status, json.loads(data)
    return status, data.decode()


class RunningBroker:
    """A ``python -m broker`` child process on an ephemeral loopback port;
    ``tls``: the ``ssl.SSLContext`` its requests use when it serves https."""

    def __init__(self, server):
        self.server = server
        self.url = server.url
        self.origin = server.url.rsplit("/", 1)[0]
        self.tls = None

    def request(self, method, path, body=None, headers=None):
        """(status, parsed JSON or text body) of one HTTP request to the broker."""
        return http_request(self.origin + path, method, body, headers, self.tls)

    def stats(self):
        return self.request("GET", "/stats")[1]
