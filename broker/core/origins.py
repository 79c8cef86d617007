"""Which web origins may use the broker from a browser (``--allowed-origins``).

Rules this module keeps:

* An origin is compared exactly, as ``scheme://host[:port]`` in lower case,
  with the scheme's default port left out; ``null`` (sandboxed frames, files)
  is an origin like any other and is allowed only where it is listed.
* ``*`` alone allows every origin: a public ticker embedded anywhere. Nothing
  a browser can reach on the broker acts on cookies (publishing takes a bearer
  token), so ``*`` exposes no one's credentials.
* A page is always allowed on its own origin (the ``Host`` it was asked for).
* Requests with no ``Origin`` do not come from another site's page in a
  browser, and are not refused here.

Applied by the transports: websockets from other origins get 403, CORS answers
name only allowed origins (credentials with them), and the iframe and htmlfile
pages may be framed only by allowed origins. No sockets here.
"""

import re

ANY = "*"
_ORIGIN = re.compile(r"(https?)://(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::([0-9]{1,5}))?")
_DEFAULT_PORTS = {"http": "80", "https": "443"}


def normalize(origin):
    """``origin`` in the form it is compared in; ValueError if it is not one."""
    text = origin.strip().lower()
    if text == "null":
        return text
    match = _ORIGIN.fullmatch(text)
    if not match:
        raise ValueError("not an origin: %r (expected scheme://host[:port], null or *)" % origin)
    scheme, host, port = match.groups()
    if port is None or port == _DEFAULT_PORTS[scheme]:
        return "%s://%s" % (scheme, host)
    return "%s://%s:%s" % (scheme, host, port)


class OriginPolicy:
    """The origins allowed to use the broker from a browser."""

    def __init__(self, origins=(ANY,)):
        origins = tuple(origins)
        if ANY in origins and len(origins) > 1:
            raise ValueError("* allows every origin: list origins or give * alone")
        self.any = origins == (ANY,)
        self.origins = frozenset() if self.any else frozenset(normalize(o) for o in origins)

    def allows(self, origin, host):
        """Whether a page of ``origin`` may use the broker, asked for as ``host``."""
        if self.any:
            return True
        try:
            origin = normalize(origin)
        except ValueError:
            return False
        return origin in self.origins or origin.split("://", 1)[-1] == host.lower()

    def frame_ancestors(self):
        """The ``Content-Security-Policy`` that lets only allowed origins frame a
        page, or None when any may."""
        if self.any:
            return None
        sources = sorted(o for o in self.origins if o != "null")
        return "frame-ancestors " + " ".join(["'self'"] + sources)
