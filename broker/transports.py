"""sockjs-tornado transports, with the broker's fixes and its websocket fast path.

Each class here replaces the sockjs-tornado handler it subclasses, for every
router the broker builds (see ``broker.sockjs.TRANSPORT_OVERRIDES``), so the
production broker and the conformance services share one code path.

Websocket fast path: a broadcast batch already holds its websocket frame as
bytes. ``write_prebuilt`` sends those bytes straight to the socket when
Tornado's write buffer for the connection is empty (the common case), with no
per-connection encoding, framing or Future; only a partial write falls back on
``IOStream.write``, which keeps the byte order. permessage-deflate is never
offered (``get_compression_options`` returns None, Tornado's default), so every
connection takes the same unmasked, uncompressed bytes.
"""

import logging

from sockjs.tornado import proto
from sockjs.tornado import transports as base

LOG = logging.getLogger("broker.transports")

MESSAGE_TOO_BIG = (1009, "Message too big")


class _PrebuiltWriter:
    """Mixin for websocket handlers: write shared, prebuilt frames to the socket."""

    _stream = None

    def _attach_stream(self):
        self._stream = self.ws_connection.stream

    def write_prebuilt(self, data):
        """Send ``data``; False when the connection's unsent bytes are over the bound."""
        stream = self._stream
        if stream is None or stream.closed():
            return True
        pending = len(stream._write_buffer)
        if pending > self.server.max_buffer:
            return False
        if not pending:
            try:
                sent = stream.socket.send(data)
            except BlockingIOError:
                sent = 0
            except OSError:
                stream.close()
                return True
            if sent == len(data):
                return True
            data = memoryview(data)[sent:]
        stream.write(data)
        return True


class WebSocketTransport(_PrebuiltWriter, base.WebSocketTransport):
    """SockJS over websocket (``/<server>/<session>/websocket``)."""

    def open(self, session_id):
        self._attach_stream()
        super().open(session_id)

    def deliver(self, batch):
        return self.write_prebuilt(batch.sockjs_websocket)

    def on_message(self, message):
        if not message or not self.session:
            return
        try:
            messages = proto.json_decode(message)
        except ValueError:
            LOG.debug("closing websocket %s: broken JSON", self.request.remote_ip)
            self.abort_connection()
            return
        self.session.on_messages(messages if isinstance(messages, list) else (messages,))


class RawWebSocketTransport(_PrebuiltWriter, base.RawWebSocketTransport):
    """Plain websocket (``/websocket``): one text frame per message, no SockJS framing."""

    def open(self):
        self._attach_stream()
        super().open()

    def deliver(self, batch):
        return self.write_prebuilt(batch.raw_websocket)


class _SizeLimitedSend:
    """Refuse a send request over ``max_message_size`` and close only its session."""

    def post(self, session_id):
        if len(self.request.body) <= self.server.max_message_size:
            return super().post(session_id)
        self.preflight()
        self.disable_cache()
        session = self._get_session(session_id)
        if session is None or session.is_closed:
            self.set_status(404)
            return
        session.close(*MESSAGE_TOO_BIG)
        self.set_status(413)
        self.set_header("Content-Type", "text/plain; charset=UTF-8")
        self.write("Message too big.")


class XhrSendHandler(_SizeLimitedSend, base.XhrSendHandler):
    pass


class JSONPSendHandler(_SizeLimitedSend, base.JSONPSendHandler):
    pass
