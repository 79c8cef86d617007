"""Building the broker's application and running it until SIGTERM or SIGINT."""

import asyncio
import logging
import resource
import signal

from tornado.httpserver import HTTPServer
from tornado.ioloop import IOLoop, PeriodicCallback
from tornado.netutil import bind_sockets
from tornado.web import Application

from broker import api, assets, collector
from broker.config import http_url, parse_args
from broker.hub import Hub
from broker.origins import OriginPolicy
from broker.sockjs import BroadcastConnection, BrokerRouter, FeedConnection

LOG = logging.getLogger("broker")

GOING_AWAY = (3000, "Go away!")
SHUTDOWN_GRACE = 0.2


def _log_request(handler):
    status = handler.get_status()
    level = logging.WARNING if status >= 500 else logging.DEBUG
    request = handler.request
    logging.getLogger("tornado.access").log(
        level, "%d %s %s (%s) %.1fms", status, request.method, request.uri, request.remote_ip,
        1000.0 * request.request_time())


def application_settings(max_message_size):
    """Tornado settings shared by every application the broker builds."""
    return {"websocket_max_message_size": max_message_size, "log_function": _log_request}


def max_body_size(max_message_size):
    """Bodies up to this size are read and then refused with a clear answer;
    larger ones are cut off by the HTTP server before they are buffered."""
    return 4 * max_message_size + 4096


def make_app(config, hub, gc_trigger=None):
    """The Tornado application: the SockJS service at ``config.prefix`` and the API;
    ``gc_trigger`` (see :mod:`broker.collector`) adds its counters to ``/stats``."""
    connection = BroadcastConnection if config.client_publish else FeedConnection
    router = BrokerRouter(connection, config.prefix, {"sockjs_url": assets.SOCKJS_URL}, hub=hub,
                          max_message_size=config.max_message_size, max_buffer=config.max_buffer,
                          write_timeout=config.write_timeout,
                          origins=OriginPolicy(config.allowed_origins), client_rate=config.client_rate)
    routes = router.urls + assets.routes(config.prefix) + [
        (r"/publish", api.PublishHandler,
         dict(hub=hub, token=config.publish_token, max_message_size=config.max_message_size)),
        (r"/stats", api.StatsHandler, dict(hub=hub, router=router, gc_trigger=gc_trigger)),
        (r"/healthz", api.HealthHandler),
    ]
    return Application(routes, **application_settings(config.max_message_size))


def raise_open_files_limit():
    """Every connection is a file descriptor: use the whole hard limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


async def serve_until_signalled(server, host, port, name, path):
    """Listen on ``host:port``, print ``<name> listening on <url of path>`` (the
    launch contract of ``loadtest.servers``), and stop accepting connections at
    the first SIGTERM or SIGINT."""
    sockets = bind_sockets(port, host)
    server.add_sockets(sockets)
    print("%s listening on %s" % (name, http_url(host, sockets[0].getsockname()[1], path)), flush=True)
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping.set)
    await stopping.wait()
    server.stop()


async def run(config):
    gc_trigger = collector.install()
    hub = Hub(IOLoop.current().add_callback, replay=config.replay)
    server = HTTPServer(make_app(config, hub, gc_trigger), max_body_size=max_body_size(config.max_message_size))
    hub.sample()
    sampler = PeriodicCallback(hub.sample, 1000)
    sampler.start()
    await serve_until_signalled(server, config.host, config.port, "broker", config.prefix)
    LOG.info("shutting down: closing %d sessions", len(hub))
    for connection in hub:
        connection.disconnect(*GOING_AWAY)
    sampler.stop()
    # Close frames are already in the kernel or in Tornado's buffers; one short
    # pause lets the loop write what is buffered before the process exits.
    await asyncio.sleep(SHUTDOWN_GRACE)


def main(argv=None):
    config = parse_args(argv)
    logging.basicConfig(level=config.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    raise_open_files_limit()
    asyncio.run(run(config))
