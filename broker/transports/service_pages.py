"""The SockJS service's fixed pages, as the current protocol defines them.

``InfoHandler`` (``/info``) is never cached and never transformed.
``IFrameHandler`` (``/iframe.html``, ``/iframe-<version>.html``, with or
without a query string) serves the iframe page of protocol 0.3.3, which loads
the client library first and then bootstraps it; the page is cacheable for a
year and answers ``If-None-Match`` with a bare 304. Its Content-Security-Policy
lets it run those two scripts only, and be framed only by allowed origins.
"""

import base64
import hashlib

from sockjs.tornado import static

from broker.transports.http_transports import NewSessions, ServiceHeaders

IFRAME_SCRIPT = """
    document.domain = document.domain;
    SockJS.bootstrap_iframe();
  """
IFRAME_PAGE = """<!DOCTYPE html>
<html>
<head>
  <meta http-equiv="X-UA-Compatible" content="IE=edge" />
  <meta http-equiv="Content-Type" content="text/html; charset=UTF-8" />
  <script src="%s"></script>
  <script>""" + IFRAME_SCRIPT + """</script>
</head>
<body>
  <h2>Don't panic!</h2>
  <p>This is a SockJS hidden iframe. It's used for cross domain magic.</p>
</body>
</html>"""
# The page runs the client library the broker serves and its own bootstrap, nothing else.
IFRAME_SCRIPTS = "script-src 'self' 'sha256-%s'" % base64.b64encode(
    hashlib.sha256(IFRAME_SCRIPT.encode()).digest()).decode()


class InfoHandler(NewSessions, ServiceHeaders, static.InfoHandler):
    """``/info``, refused like a session's opening request over the accept rate."""

    opens_session = False


class IFrameHandler(static.IFrameHandler):
    def get(self):
        page = (IFRAME_PAGE % self.server.settings["sockjs_url"]).encode()
        self.enable_cache()
        self.set_header("Content-Type", "text/html; charset=UTF-8")
        self.set_header("X-Content-Type-Options", "nosniff")
        directives = (IFRAME_SCRIPTS, self.server.rules.origins.frame_ancestors())
        self.set_header("Content-Security-Policy", "; ".join(d for d in directives if d))
        self.set_header("ETag", '"%s"' % hashlib.md5(page).hexdigest())
        if self.check_etag_header():
            self.set_status(304)
            return
        self.write(page)
