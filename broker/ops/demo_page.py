"""The demo page, its static files, and sockjs-client served by the broker itself.

sockjs-client comes from npm, pinned in ``package-lock.json``, and is served from
the first of these that holds ``sockjs.min.js``:

* ``sockjs_client/`` beside this module: the wheel's copy of sockjs-client's
  ``dist`` files and license, taken from npm when the wheel was built (setup.py),
  so an installed broker needs no Node.js;
* ``node_modules/sockjs-client/dist`` (``npm ci``) in the directory that holds
  the ``broker`` package (a checkout), then in the current directory.

The repository carries no copy: ``sockjs_client/`` exists only in a built wheel.
The SockJS router's ``sockjs_url`` points at it, so the iframe transports load
the same client version as the page, from the broker, with no CDN. When it is
missing the broker still runs: it warns once at startup, and the demo page
says how to install it.
"""

import logging
import os

from tornado.web import RequestHandler, StaticFileHandler

LOG = logging.getLogger("broker.ops.demo_page")

HERE = os.path.dirname(os.path.abspath(__file__))
# The directory holding the ``broker`` package: a checkout, where ``npm ci`` runs.
CHECKOUT = os.path.dirname(os.path.dirname(HERE))
DEMO_DIR = os.path.join(HERE, "demo")
# Where setup.py's build step puts sockjs-client in the wheel.
PACKAGED_SOCKJS_CLIENT = os.path.join(HERE, "sockjs_client")
SOCKJS_CLIENT_PATH = "/vendor/sockjs-client/"
SOCKJS_URL = SOCKJS_CLIENT_PATH + "sockjs.min.js"

DEMO_PAGE_POLICY = "; ".join([
    "default-src 'self'",
    "connect-src 'self'",
    "img-src 'self' data:",
    "object-src 'none'",
    "base-uri 'none'",
    "frame-ancestors 'self'",
])


def sockjs_client_candidates():
    """Where sockjs-client may be, in lookup order: the wheel's copy, then where ``npm ci`` puts it."""
    roots = [CHECKOUT]
    if os.path.realpath(os.getcwd()) != os.path.realpath(roots[0]):
        roots.append(os.getcwd())
    return [PACKAGED_SOCKJS_CLIENT] + [os.path.join(root, "node_modules", "sockjs-client", "dist") for root in roots]


def find_sockjs_client():
    """The directory holding ``sockjs.min.js``, or None."""
    for directory in sockjs_client_candidates():
        if os.path.isfile(os.path.join(directory, "sockjs.min.js")):
            return directory
    return None


class DemoPageHandler(RequestHandler):
    """The demo page, under a content security policy that allows only the broker itself."""

    def initialize(self, prefix, heartbeat_delay, sockjs_client_installed):
        self.prefix = prefix
        self.heartbeat_delay = heartbeat_delay
        self.sockjs_client_installed = sockjs_client_installed

    def get_template_path(self):
        return DEMO_DIR

    def get(self):
        self.set_header("Content-Security-Policy", DEMO_PAGE_POLICY)
        self.set_header("X-Content-Type-Options", "nosniff")
        self.set_header("Cache-Control", "no-cache")
        self.render("index.html", prefix=self.prefix, heartbeat_ms=round(self.heartbeat_delay * 1000),
                    sockjs_url=SOCKJS_URL,
                    sockjs_client_installed=self.sockjs_client_installed)


def routes(prefix, heartbeat_delay):
    """Routes for ``/`` (the demo of the SockJS service at ``prefix``, whose client is told the
    broker's ``heartbeat_delay``, the seconds between its heartbeats), its script and
    style sheet and the broker's browser client (``broker-client.js``) under
    ``/static/``, and sockjs-client under ``SOCKJS_CLIENT_PATH``."""
    sockjs_client = find_sockjs_client()
    if sockjs_client is None:
        LOG.warning("sockjs-client is not installed (looked in %s): the demo page and the iframe "
                    "transports will not work; run `npm ci` in the broker's checkout",
                    " and ".join(sockjs_client_candidates()))
    return [
        (r"/", DemoPageHandler, {"prefix": prefix, "heartbeat_delay": heartbeat_delay,
                                 "sockjs_client_installed": bool(sockjs_client)}),
        (r"/static/(demo\.(?:js|css)|broker-client\.js)", StaticFileHandler, {"path": DEMO_DIR}),
        (SOCKJS_CLIENT_PATH + r"(.*)", StaticFileHandler,
         {"path": sockjs_client or sockjs_client_candidates()[0]}),
    ]
