"""The router: sockjs-tornado's, each handler it serves swapped for the broker's own.

Rules this module keeps:

* Every router the broker builds (the production ``/broadcast`` and the
  conformance services) serves the same fixed transports: each sockjs-tornado
  handler is replaced by the broker's version (``TRANSPORT_OVERRIDES``), and
  each session is a :class:`broker.transports.session.BrokerSession`.
* It only routes, and keeps what every handler of it shares: the clients'
  rules, the node's parts, the sockets behind (``behind``) and their figures.
  The room's subscriber is :mod:`broker.transports.subscriber`.
"""

from sockjs.tornado import SockJSRouter
from sockjs.tornado import static as stock_static
from sockjs.tornado import transports as stock

from broker.core.figures import GAUGE, Figure, Metric
from broker.core.hub import DISCONNECTS
from broker.core.node import ClientRules, Node
from broker.transports import http_transports, polling, service_pages, streams, websocket
from broker.transports.session import BrokerSession

TRANSPORT_OVERRIDES = {
    stock.WebSocketTransport: websocket.WebSocketTransport,
    stock.RawWebSocketTransport: websocket.RawWebSocketTransport,
    stock.XhrSendHandler: http_transports.XhrSendHandler,
    stock.JSONPSendHandler: http_transports.JSONPSendHandler,
    stock.XhrPollingTransport: polling.XhrPollingTransport,
    stock.XhrStreamingTransport: streams.XhrStreamingTransport,
    stock.EventSourceTransport: streams.EventSourceTransport,
    stock.HtmlFileTransport: streams.HtmlFileTransport,
    stock.JSONPTransport: polling.JSONPTransport,
    stock_static.InfoHandler: service_pages.InfoHandler,
    stock_static.IFrameHandler: service_pages.IFrameHandler,
}

DEFAULT_SETTINGS = {
    "jsessionid": False,
    "verify_ip": False,
    # Each stream ends at a limit drawn below response_limit (broker.transports.streams).
    "draw_response_limit": True,
}


class BrokerRouter(SockJSRouter):
    """A SockJS router serving the broker's transports: its clients held to
    ``rules`` (a :class:`broker.core.node.ClientRules`), its sessions served by
    ``node``'s parts (a :class:`broker.core.node.Node`): the room they join,
    the limits that admit them, the drain that turns them away, the wheels
    that ping and heartbeat them.
    ``behind`` holds the websockets holding bytes the kernel would not take
    yet, and :meth:`unsent_bytes` adds up those bytes.
    """

    FIGURES = (
        Figure("sessions", "stats.sess_active", Metric("sessions", GAUGE, "SockJS sessions alive (a polling session "
                                                       "counts until it expires)")),
        Figure("ping_timeout_disconnects", "node.ping_timeouts", DISCONNECTS, ("ping_timeout",)),
        Figure("slow_consumers.behind", lambda router: len(router.behind),
               Metric("connections_behind", GAUGE, "Websockets and streams holding bytes the kernel would not "
                      "take yet")),
        Figure("slow_consumers.unsent_bytes", lambda router: router.unsent_bytes(),
               Metric("unsent_bytes", GAUGE, "Bytes the websockets and streams behind hold for their clients")),
        Figure("slow_consumers.max_buffer", "rules.max_buffer"),
        Figure("slow_consumers.write_timeout_s", "rules.write_timeout"),
    )

    def __init__(self, connection, prefix, settings=None, rules=ClientRules(), node=None):
        merged = dict(DEFAULT_SETTINGS)
        merged.update(settings or {})
        super().__init__(connection, prefix, merged, session_kls=BrokerSession)
        self.prefix = prefix
        self.rules = rules
        self.node = node if node is not None else Node()
        self.behind = set()

    def unsent_bytes(self):
        """Bytes the websockets behind hold for their clients, each at most
        ``max_buffer`` and a frame."""
        return sum(handler.unsent_bytes() for handler in self.behind)

    @property
    def urls(self):
        """sockjs-tornado's routes, each handler replaced by the broker's own."""
        return [(pattern, TRANSPORT_OVERRIDES.get(handler, handler), kwargs)
                for pattern, handler, kwargs in super().urls]

    def apply_routes(self, routes):
        routes.extend(self.urls)
        return routes
