"""Building the broker's application and running it until SIGTERM or SIGINT, then draining it."""

import asyncio
import dataclasses
import functools
import logging
import signal
import time

from cryptography.exceptions import UnsupportedAlgorithm
from tornado.httpserver import HTTPServer
from tornado.ioloop import IOLoop, PeriodicCallback
from tornado.netutil import bind_sockets
from tornado.web import Application

from broker import _internals
from broker.cluster import redis_address
from broker.config import DEFAULTS, flag_named, http_url, parse_args, refuse_at_start
from broker.core.audience import Audience
from broker.core.connection_age import AgeLimit
from broker.core.drain import Drain
from broker.core.heartbeats import HeartbeatWheel, PingWheel
from broker.core.hub import Hub, Keeping
from broker.core.idempotency import Window
from broker.core.liveness import Liveness
from broker.core.memory_engine import MemoryEngine
from broker.core.limits import Limits, TrustedProxies, default_max_connections
from broker.core.node import ClientRules, Node
from broker.core.origins import OriginPolicy
from broker.core.rooms import Rooms
from broker.flags import file_error
from broker.ops import api, demo_page, gc_policy, log_rate, metrics, pypy_environment, warm_up
from broker.ops.loop_watch import LoopWatch
from broker.protocol import tokens
from broker.protocol.close_codes import RECONNECT
from broker.protocol.request_heads import MAX_HEAD_BYTES
from broker.runtime import raise_open_files_limit
from broker.transports import polling, tls
from broker.transports.client_address import ClientAddressCheck
from broker.transports.listener import Listener
from broker.transports.request_timeouts import RequestTimeouts
from broker.transports.router import BrokerRouter
from broker.transports.subscriber import BroadcastConnection, FeedConnection

LOG = logging.getLogger("broker")

# At the end, the longest the broker waits for its connections to close (their close frames
# written), and how often it looks.
SHUTDOWN_GRACE = 0.2
SHUTDOWN_CHECK = 0.01
# How often a drain closes its next clients: 10 times a second.
DRAIN_TICK = 0.1
# The longest the warm-up may take, however many sessions --warm-up-sessions asks for.
WARM_UP_LIMIT = 60.0
# Connections the kernel completes before the broker accepts them: in a reconnect storm
# thousands arrive in a second, and past Tornado's default of 128 the kernel drops their
# SYNs, which clients retry only after 1, 3 and 7 s. As many as the kernel allows: it caps
# this at net.core.somaxconn (4096 on Linux 5.4 and later).
LISTEN_BACKLOG = 65535
# How long a named room is kept empty and idle when --history-seconds keeps messages for ever.
IDLE_ROOM_S = 60.0


def _log_request(handler):
    """Server errors at WARNING, the rest at DEBUG. A 503 is one of the broker's own refusals
    (the accept rate, a limit, a drain, Redis away), each counted in /stats and /metrics: a
    storm of them must cost no log line each."""
    status = handler.get_status()
    level = logging.WARNING if status >= 500 and status != 503 else logging.DEBUG
    request = handler.request
    logging.getLogger("tornado.access").log(
        level, "%d %s %s (%s) %.1fms", status, request.method, request.uri, request.remote_ip,
        1000.0 * request.request_time())


def application_settings():
    """Tornado settings shared by every application the broker builds."""
    return {"log_function": _log_request}


def ping_wheel(config):
    """The :class:`PingWheel` of ``config``'s ping interval and timeout (cut to
    the interval), or None when websockets are not pinged."""
    if not config.ws_ping_interval:
        return None
    return PingWheel(config.ws_ping_interval, min(config.ws_ping_timeout, config.ws_ping_interval))


def max_body_size(max_message_size):
    """Bodies up to this size are read and then refused with a clear answer;
    larger ones are cut off by the HTTP server before they are buffered."""
    return 4 * max_message_size + 4096


def client_rules(config):
    """The :class:`ClientRules` of ``config``'s flags."""
    return ClientRules(max_message_size=config.max_message_size, max_buffer=config.max_buffer,
                       write_timeout=config.write_timeout, origins=OriginPolicy(config.allowed_origins),
                       client_rate=config.client_rate, max_session_rooms=config.max_session_rooms,
                       private_rooms=config.private_rooms or ())


def make_router(config, node):
    """The SockJS service at ``config.prefix``, its sessions served by ``node``."""
    connection = BroadcastConnection if config.client_publish else FeedConnection
    return BrokerRouter(connection, config.prefix,
                        {"sockjs_url": demo_page.SOCKJS_URL, "heartbeat_delay": config.heartbeat_delay,
                         "disconnect_delay": config.disconnect_delay},
                        client_rules(config), node)


def make_app(config, router):
    """The Tornado application: the SockJS service of ``router`` (:func:`make_router`)
    and the API, all served by its node's parts (a :class:`broker.core.node.Node`)."""
    node = router.node
    routes = router.urls + demo_page.routes(config.prefix, config.heartbeat_delay) + [
        (r"/publish", api.PublishHandler, dict(node=node, token=config.publish_token, verifier=node.verifier,
                                               max_message_size=config.max_message_size)),
        (r"/stats", api.StatsHandler, dict(node=node, router=router)),
        (r"/healthz", api.HealthHandler, dict(node=node)),
        (r"/admin/drain", api.DrainHandler, dict(node=node, token=config.admin_token)),
        (r"/metrics", metrics.MetricsHandler,
         dict(registry=metrics.registry(metrics.BrokerCollector(node, router)))),
    ]
    return Application(routes, **application_settings())


def connection_limits(config, open_files):
    """The :class:`Limits` of ``config``; without ``--max-connections``, derived
    from the open-files limit ``open_files``."""
    fitting = default_max_connections(open_files)
    if config.max_connections is None:
        return Limits(fitting, config.max_connections_per_ip, config.max_accept_rate)
    if config.max_connections > fitting:
        LOG.warning("--max-connections %d is more than the open-files limit (%d) leaves for "
                    "connections (%d): past that, the broker pauses accepting",
                    config.max_connections, open_files, fitting)
    return Limits(config.max_connections, config.max_connections_per_ip, config.max_accept_rate)


# What the HTTP server reads at once: a request's head fits. Tornado allocates this much
# afresh for every read, and on PyPy each read's buffer stays until the next minor
# collection, so a client sending its head a byte at a time costs this much a byte, not
# Tornado's 64 KiB. Bodies are read in as many reads as they take.
READ_CHUNK_BYTES = MAX_HEAD_BYTES


def make_listener(config, router, app, limits, secure=None):
    """The HTTP server of ``app`` with its timeouts, and the :class:`Listener` that
    feeds it, which answers the sends of ``router``'s sessions on new connections
    itself (:func:`broker.transports.polling.answer_first_send`)."""
    proxies = None
    if config.client_address_header and config.max_connections_per_ip:
        proxies = TrustedProxies(config.trusted_proxies, config.client_address_header)
        if not proxies.trusts(config.host) and config.trusted_proxies == DEFAULTS.trusted_proxies:
            LOG.warning("--client-address-header %s is believed from loopback peers only "
                        "(--trusted-proxies %s): a proxy on another host needs its address there",
                        config.client_address_header, ",".join(config.trusted_proxies))
        app = ClientAddressCheck(app, limits, config.client_address_header)
    server = HTTPServer(app, max_body_size=max_body_size(config.max_message_size), chunk_size=READ_CHUNK_BYTES)
    listener = Listener(server, limits, proxies=proxies, send_buffer=config.send_buffer, tls_context=secure,
                        timeouts=RequestTimeouts(config.header_timeout, config.body_timeout, config.write_timeout))
    listener.first_send = functools.partial(polling.answer_first_send, router)
    return listener


def tls_context(config):
    """The TLS context of ``--certfile``, or None; a certificate that cannot be
    served stops the broker with a clear error, as a configuration error."""
    if config.certfile is None:
        return None
    try:
        return tls.server_context(config.certfile, config.keyfile)
    except OSError as error:
        refuse_at_start("%s %s%s: %s" % (
            flag_named("--certfile"), config.certfile,
            "" if config.keyfile is None else " %s %s" % (flag_named("--keyfile"), config.keyfile),
            file_error(error)))


def bound_sockets(host, port):
    """The listening sockets of ``host:port``; an address the broker cannot listen on
    (another process holds the port, a port under 1024 without the right to it, an
    address of no interface here) stops it as a configuration error."""
    try:
        return bind_sockets(port, host, backlog=LISTEN_BACKLOG)
    except OSError as error:
        refuse_at_start("cannot listen on %s, %s and %s: %s" % (
            http_url(host, port, "")[len("http://"):], flag_named("--host"), flag_named("--port"),
            file_error(error)))


def check_address(host, port):
    """:func:`bound_sockets`, closed at once: as the broker starts, before its warm-up and
    its Redis, so that an address it cannot listen on costs nothing else. A port of 0 (any
    free port) cannot be taken."""
    if port:
        for sock in bound_sockets(host, port):
            sock.close()


def listen(server, host, sockets, name, path, https=False):
    """Listen on ``sockets``, bound to ``host`` (``server``: a Tornado TCP server or a
    :class:`Listener`), and print ``<name> listening on <url of path>`` (the
    launch contract of ``loadtest.contenders.child_process``)."""
    server.add_sockets(sockets)
    print("%s listening on %s" % (name, http_url(host, sockets[0].getsockname()[1], path, https)), flush=True)


def on_stop_signals(handler):
    """Call ``handler()`` at each SIGTERM and SIGINT."""
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, handler)


async def serve_until_signalled(server, host, port, name, path):
    """:func:`listen`, and stop accepting connections at the first SIGTERM or SIGINT."""
    stopping = asyncio.Event()
    on_stop_signals(stopping.set)
    listen(server, host, bound_sockets(host, port), name, path)
    await stopping.wait()
    server.stop()


async def drain_then_stop(drain, rooms, listener, share):
    """Wait for the first request to stop (SIGTERM and SIGINT make them: see
    :func:`run`), close the clients as ``drain`` spreads them (see
    :mod:`broker.core.drain`; ``share()``: the cluster's clients per broker, or None),
    then stop accepting and close whoever is left: the end of the period or a second
    request ends it."""
    requested = asyncio.Event()
    drain.wake = requested.set
    if not drain.draining:
        await requested.wait()
    loop = asyncio.get_running_loop()
    clients = rooms.connections()
    drain.start(clients, loop.time(), share())
    LOG.info("draining: closing %d clients over %g s", len(clients), drain.period)
    while drain.requests < 2:
        for connection in drain.due(loop.time()):
            connection.disconnect(*RECONNECT)
        if drain.done:
            break
        requested.clear()
        try:
            await asyncio.wait_for(requested.wait(), DRAIN_TICK)
        except asyncio.TimeoutError:
            pass
    listener.stop()
    close_every_session(rooms)


def close_every_session(rooms):
    """Close every session of every room of ``rooms`` with the reconnect code."""
    clients = rooms.connections()
    LOG.info("shutting down: closing %d sessions", len(clients))
    for connection in clients:
        connection.disconnect(*RECONNECT)


def close_due(node):
    """Close the sessions whose token ``node.tokens`` finds overdue (none came, or it expired),
    and, unless the drain is closing everyone, the connections ``node.ages`` finds old enough."""
    for connection, close in node.tokens.due(time.monotonic(), time.time()):
        connection.disconnect(*close)
    if node.ages is not None and not node.drain.draining:
        for connection in node.ages.due(time.monotonic()):
            connection.disconnect(*RECONNECT)


def token_verifier(config):
    """The :class:`broker.protocol.tokens.Verifier` of ``--token-secret`` and ``--token-public-key``,
    or None without either; a key file it cannot read, or without a key it takes, stops the broker."""
    if config.token_secret is None and config.token_public_key is None:
        return None
    keys = []
    if config.token_public_key is not None:
        try:
            with open(config.token_public_key, "rb") as pem:
                keys = tokens.public_keys(pem.read())
        except (OSError, ValueError, UnsupportedAlgorithm) as error:
            refuse_at_start("%s %s: %s" % (flag_named("--token-public-key"), config.token_public_key,
                                           file_error(error) if isinstance(error, OSError) else error))
    return tokens.Verifier(config.token_secret.split(" ") if config.token_secret else (), keys)


def announce_audience(node):
    """Send the announcement that found no batch to ride in for a second alone, then make
    the next, when one is due (see :mod:`broker.core.audience`), in every room."""
    node.hub.send_announcement()
    announcement = node.audience.announcement(time.monotonic())
    if announcement is not None:
        node.hub.announcement.announce(announcement)
    node.rooms.announce(node.audience.every)


def cluster_backplane(config):
    """The :class:`broker.cluster.backplane.Backplane` of ``--redis``, or None: without
    it nothing of Redis is imported."""
    if config.redis is None:
        return None
    try:
        redis_address.check(redis_address.parse(config.redis))
    except ValueError as error:
        refuse_at_start("%s: %s" % (flag_named("--redis"), error))
    from broker.cluster.backplane import Backplane
    return Backplane(config.redis, config.prefix, max(config.history, config.replay), config.redis_min_replicas)


def keeping(config):
    """What a room of ``config`` keeps and replays (:class:`broker.core.resumes.Keeping`)."""
    return Keeping(config.replay, config.history, config.history_seconds, config.max_buffer)


def room_maker(config, writes=None):
    """What makes a named room (:mod:`broker.core.rooms`): a Hub of its own, which in a cluster
    relays its clients' messages through its room's script (``writes``, a
    :class:`broker.cluster.room_writes.RoomWrites`)."""
    kept = keeping(config)
    return lambda name: Hub(IOLoop.current().add_callback, kept, relay=None if writes is None else writes.relay(name),
                            max_message_size=config.max_message_size)


def make_node(config, hub, limits, backplane=None, collection=None, tls_failures=None):
    """The :class:`Node` of ``config``: ``hub``, its default room, beside its named rooms
    (:func:`room_maker`), and the parts its flags ask for; its
    Engine in memory or, with a ``backplane``, through it and its named rooms' own connections
    (:mod:`broker.core.engines`, :mod:`broker.cluster.rooms_in_redis`); its
    liveness is told by the ``backplane``, if any, of its round trips."""
    liveness = Liveness(time.monotonic(), round_trips=backplane is not None)
    window = Window(config.idempotency_window)
    in_redis = None
    if backplane is None:
        audience = Audience(hub.__len__, every=config.announce_audience)
        engine = MemoryEngine(window)
    else:
        from broker.cluster.redis_engine import RedisEngine
        from broker.cluster.rooms_in_redis import RoomsInRedis
        in_redis = RoomsInRedis(config.redis, config.prefix, max(config.history, config.replay),
                                config.history_seconds, backplane, bool(config.announce_audience))
        engine = RedisEngine(backplane, window, in_redis.writes)
        audience = Audience(hub.__len__, lambda: backplane.room_audience, config.announce_audience,
                            lambda: backplane.room_brokers)
        backplane.liveness = liveness
    rooms = Rooms(hub, room_maker(config, in_redis and in_redis.writes), config.max_rooms,
                  config.history_seconds or IDLE_ROOM_S, listener=in_redis)
    rooms.most_history_bytes = config.max_rooms_history
    return Node(hub=hub, rooms=rooms, limits=limits, drain=Drain(config.drain_seconds), pings=ping_wheel(config),
                heartbeats=HeartbeatWheel(config.heartbeat_delay),
                ages=AgeLimit(config.max_connection_age) if config.max_connection_age else None,
                audience=audience,
                collection=collection, backplane=backplane, rooms_in_redis=in_redis, engine=engine,
                idempotency=window, tls=tls_failures, liveness=liveness)


async def warm_up_sessions(config):
    """Serve ``config.warm_up`` sessions opened by :mod:`broker.ops.warm_up`, the broker's
    own application built from ``config`` on a node of its own (a room nobody else is in,
    limits nobody else reads, no backplane), on a loopback port of its own; then close them
    and drop it all, its timers stopped. How many were opened."""
    sessions = config.warm_up
    loop = asyncio.get_running_loop()
    started = loop.time()
    hub = Hub(IOLoop.current().add_callback, max_message_size=config.max_message_size)
    node = make_node(config, hub, Limits(sessions + 64))
    router = make_router(config, node)
    # No proxy stands before the warm-up's port: its clients are its own, by their address.
    listener = make_listener(dataclasses.replace(config, client_address_header=None), router,
                           Application(router.urls, **application_settings()), node.limits)
    sockets = bind_sockets(0, warm_up.HOST)
    listener.add_sockets(sockets)
    try:
        opened = await warm_up.open_sessions(sockets[0].getsockname()[1], config.prefix, sessions,
                                             started + WARM_UP_LIMIT,
                                             warm_up.may_send(config.client_publish, config.max_message_size))
    finally:
        listener.stop()
        listener.timeouts.stop()
        close_every_session(node.rooms)
        _internals.stop_router_timers(router)
    LOG.info("warmed up: %d sessions opened in %.1f s", opened, loop.time() - started)
    return opened


async def run(config, open_files):
    secure = tls_context(config)
    verifier = token_verifier(config)
    check_address(config.host, config.port)
    if config.warm_up:
        await warm_up_sessions(config)
    backplane = cluster_backplane(config)
    hub = Hub(IOLoop.current().add_callback, keeping(config), relay=backplane.append if backplane else None,
              max_message_size=config.max_message_size)
    if backplane is not None:
        await backplane.start(hub)
    limits = connection_limits(config, open_files)
    node = make_node(config, hub, limits, backplane, collection=gc_policy.install(limits),
                     tls_failures=None if secure is None else tls.HandshakeFailures())
    node.verifier = verifier
    if node.rooms_in_redis is not None:
        node.rooms_in_redis.start()
    if node.tls is not None:
        logging.getLogger("tornado.general").addFilter(node.tls)
    router = make_router(config, node)
    listener = make_listener(config, router, make_app(config, router), limits, secure)
    listener.handshake_failures = node.tls
    hub.sample()
    timers = [PeriodicCallback(hub.sample, 1000), PeriodicCallback(node.rooms.sample, 1000), LoopWatch(node.liveness)]
    for wheel in (node.pings, node.heartbeats):
        if wheel is not None:
            timers.append(PeriodicCallback(wheel.tick, 1000 * wheel.tick_seconds))
    timers.append(PeriodicCallback(functools.partial(close_due, node), 1000))
    if node.audience.every:
        timers.append(PeriodicCallback(functools.partial(announce_audience, node), 1000))
    if hasattr(node.collection, "audit_if_due"):
        timers.append(PeriodicCallback(node.collection.audit_if_due, 1000))
    for timer in timers:
        timer.start()
    on_stop_signals(node.drain.request)
    listen(listener, config.host, bound_sockets(config.host, config.port), "broker", config.prefix, secure is not None)
    await drain_then_stop(node.drain, node.rooms, listener, node.audience.share)
    for connection in node.tokens.waiting():  # in no room: a drain closes none of them
        connection.disconnect(*RECONNECT)
    for timer in timers:
        timer.stop()
    if backplane is not None:
        await node.rooms_in_redis.stop()
        await backplane.stop()
    await connections_closed(limits, SHUTDOWN_GRACE)


async def connections_closed(limits, grace):
    """Until every connection ``limits`` counts has closed, at most ``grace`` seconds: close
    frames are already in the kernel or in Tornado's buffers, and a short wait lets the loop
    write what is buffered before the process exits. A broker with none exits at once."""
    deadline = asyncio.get_running_loop().time() + grace
    while limits.open and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(SHUTDOWN_CHECK)


def main(argv=None):
    config = parse_args(argv)
    pypy_environment.set_jit_parameters(config.pypy_jit)
    logging.basicConfig(level=config.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    log_rate.install(logging.getLogger().handlers)
    asyncio.run(run(config, raise_open_files_limit()))
