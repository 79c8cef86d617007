"""SockJS HTTP-transport load clients on one asyncio loop: a session's two connections, their bytes, its events.

Rules:

- An :class:`HttpConnection` only moves bytes between its sockets and a sans-I/O
  :class:`loadtest.framing.http_transport_protocol.HttpSessionProtocol`, and acts on the
  events that returns, as :class:`loadtest.client.connections.Connection` does for a websocket.
- A session holds a receiving connection, replaced when the protocol says so, and a sending
  one, opened whenever the protocol has something to send and none is open. A connection
  that cannot be opened closes the client. Every one is TLS when the session's is.
- Every socket reads into the loop's shared buffer; one dropped on purpose is detached
  first, so its late close is nobody's event.
"""

import asyncio

from loadtest.client.deliveries import ClientConnection, failure_reason, now_us
from loadtest.framing.websocket_protocol import OPENED, Delivered
from loadtest.framing.http_transport_protocol import NEW_CONNECTION, NEW_SEND_CONNECTION


def _ignore(*args):
    pass


class Socket(asyncio.BufferedProtocol):
    """One TCP connection of a session: hands each read (bytes) to ``on_data``, its close to ``on_closed``."""

    def __init__(self, read_view, on_data, on_closed):
        self.transport = None
        self._read_view = read_view
        self._on_data = on_data
        self._on_closed = on_closed

    def connection_made(self, transport):
        self.transport = transport

    def get_buffer(self, sizehint):
        return self._read_view

    def buffer_updated(self, nbytes):
        self._on_data(bytes(self._read_view[:nbytes]))

    def connection_lost(self, exc):
        self._on_closed()

    def drop(self):
        """Close it, and hear nothing more of it."""
        self._on_data = self._on_closed = _ignore
        if self.transport is not None:
            self.transport.abort()


class HttpConnection(ClientConnection):
    """One SockJS session over an HTTP transport, from ``local`` (an address to bind, or None)."""

    def __init__(self, protocol, histogram, read_buffer):
        super().__init__(protocol, histogram)
        self._read_view = memoryview(read_buffer)
        self._address = None
        self._timeout = None
        self._receiving = None
        self._sending = None
        self._send_connecting = False
        self._tasks = set()

    @property
    def reopened(self):
        """Streams reopened, or polls made after the first."""
        return self.protocol.reopened

    async def open(self, host, port, local, timeout, ssl_context=None):
        """Open the session at ``host``:``port`` (as :meth:`loadtest.client.connections.Connection.open`)."""
        self._address = (host, port, local, ssl_context)
        self._timeout = timeout
        self._receiving = await self._connect(self._received, self._receive_closed)
        self._receiving.transport.write(self.protocol.data_to_send())
        await asyncio.wait_for(asyncio.shield(self.opened), timeout)

    def send(self):
        """Publish this client's next message now; returns ``(seq, sent_us)``."""
        sent_us = now_us()
        seq = self.protocol.send(sent_us)
        self._flush_sends()
        return seq, sent_us

    def close(self, reason="closed by the client"):
        self._closed(self.protocol.close(reason).reason)
        self._drop_all()

    async def _connect(self, on_data, on_closed):
        host, port, local, ssl_context = self._address
        socket = Socket(self._read_view, on_data, on_closed)
        loop = asyncio.get_event_loop()
        await asyncio.wait_for(loop.create_connection(lambda: socket, host, port, local_addr=local, ssl=ssl_context),
                               self._timeout)
        return socket

    def _received(self, data):
        self._act(self.protocol.receive_data(data))

    def _receive_closed(self):
        self._receiving = None
        self._act(self.protocol.receive_closed())

    def _answered(self, data):
        self._act(self.protocol.send_answer_data(data))

    def _send_closed(self):
        self._sending = None
        self._act(self.protocol.send_closed())

    def _act(self, events):
        """Do what the protocol's ``events`` say, then write what it has to send."""
        for event in events:
            if type(event) is Delivered:
                self.received += event.count
                if event.own:
                    self._record(event.own)
            elif event is OPENED:
                self._open()
            elif event is NEW_CONNECTION:
                if self._receiving is not None:
                    self._receiving.drop()
                    self._receiving = None
                self._spawn(self._reconnect())
            elif event is NEW_SEND_CONNECTION:
                if self._sending is not None:
                    self._sending.drop()
                    self._sending = None
            else:
                self._closed(event.reason)
                self._drop_all()
                return
        if self.protocol.outgoing and self._receiving is not None:
            self._receiving.transport.write(self.protocol.data_to_send())
        if self.protocol.sends:
            self._flush_sends()

    def _flush_sends(self):
        if self._sending is not None:
            self._sending.transport.write(self.protocol.sends_to_send())
        elif not self._send_connecting:
            self._send_connecting = True
            self._spawn(self._connect_sending())

    async def _reconnect(self):
        try:
            socket = await self._connect(self._received, self._receive_closed)
        except (OSError, asyncio.TimeoutError) as exc:
            self.close(failure_reason(exc))
            return
        if not self.alive:
            socket.drop()
            return
        self._receiving = socket
        socket.transport.write(self.protocol.data_to_send())

    async def _connect_sending(self):
        try:
            socket = await self._connect(self._answered, self._send_closed)
        except (OSError, asyncio.TimeoutError) as exc:
            self.close("sending: " + failure_reason(exc))
            return
        finally:
            self._send_connecting = False
        if not self.alive:
            socket.drop()
            return
        self._sending = socket
        self._flush_sends()

    def _spawn(self, coroutine):
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _drop_all(self):
        for socket in (self._receiving, self._sending):
            if socket is not None:
                socket.drop()
        self._receiving = self._sending = None
        for task in list(self._tasks):
            task.cancel()
