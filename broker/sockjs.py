"""The sockjs-tornado integration: the broadcast connection and the router.

``BrokerRouter`` is sockjs-tornado's router with every handler it serves
swapped for the broker's version in ``broker.transports``, so all routers the
broker builds (the production ``/broadcast`` and the conformance services)
run the same fixed transports.
"""

from sockjs.tornado import SockJSConnection, SockJSRouter
from sockjs.tornado import transports as stock

from broker import transports

TRANSPORT_OVERRIDES = {
    stock.WebSocketTransport: transports.WebSocketTransport,
    stock.RawWebSocketTransport: transports.RawWebSocketTransport,
    stock.XhrSendHandler: transports.XhrSendHandler,
    stock.JSONPSendHandler: transports.JSONPSendHandler,
}

DEFAULT_SETTINGS = {
    "jsessionid": False,
    "verify_ip": False,
}


class BrokerRouter(SockJSRouter):
    """A SockJS router serving the broker's transports.

    ``max_message_size`` bounds what one send request may carry (websocket
    frames are bounded by the application's ``websocket_max_message_size``);
    ``max_buffer`` bounds the unsent bytes of one connection.
    """

    def __init__(self, connection, prefix, settings=None, hub=None,
                 max_message_size=64 * 1024, max_buffer=1024 * 1024):
        merged = dict(DEFAULT_SETTINGS)
        merged.update(settings or {})
        super().__init__(connection, prefix, merged)
        self.hub = hub
        self.max_message_size = max_message_size
        self.max_buffer = max_buffer
        self._transport_urls = [
            (pattern, TRANSPORT_OVERRIDES.get(handler, handler), kwargs)
            for pattern, handler, kwargs in self._transport_urls
        ]


class BroadcastConnection(SockJSConnection):
    """One client in the room: a hub subscriber for as long as its session is open."""

    def on_open(self, info):
        session = self.session
        self.hub = session.server.hub
        self.transport = session.transport_name
        self.deliver = getattr(session.handler, "deliver", self._deliver_queued)
        self.hub.subscribe(self)

    def on_message(self, message):
        self.hub.publish(message)

    def on_close(self):
        hub = getattr(self, "hub", None)
        if hub is not None:
            hub.unsubscribe(self)

    def disconnect(self, code, reason):
        self.session.close(code, reason)

    def _deliver_queued(self, batch):
        """Polling and streaming sessions: the pre-encoded batch through the session queue."""
        session = self.session
        if len(session.send_queue) > session.server.max_buffer:
            return False
        session.send_jsonified(batch.sockjs_body, False)
        return True


class FeedConnection(BroadcastConnection):
    """A listener only (``--no-client-publish``): what the client sends is dropped."""

    def on_message(self, message):
        pass
