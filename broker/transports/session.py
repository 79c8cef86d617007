"""A SockJS session of the broker: its queue of messages between requests, its heartbeats from a wheel.

Rules this module keeps:

* A session's queue (``send_queue``) is a :class:`broker.core.backlog.Backlog`
  of message bodies (JSON texts joined by commas): a polling session between
  two requests queues every batch, as does a streaming one between two
  streams. sockjs-tornado queues in one string, which copies itself on every
  append (quadratic in what is waiting, up to ``max_buffer``); a backlog
  appends in constant time and is joined once, into one ``a[...]`` frame
  (:func:`broker.protocol.frames.message_frame`), by the next request.
* The room writes its batches to the session (:meth:`BrokerSession.write_batch`,
  its :class:`broker.core.seams.Writer` for polling and for streams between
  two requests): a request waiting with nothing queued takes the batch's
  frame, built once for all sessions; otherwise the batch is queued, bounded
  by the router's ``max_buffer`` and one per conflating key (the backlog's
  rules), and the room drops a session over the bound.
* Heartbeats: sockjs-tornado starts a timer object for each handler a
  session serves (a websocket, or a request of a poll or stream), and a new
  timer handle every delay. With a wheel (the node's ``heartbeats``) the
  session is a member instead, from ``start_heartbeat`` (a handler attached)
  to ``stop_heartbeat`` (it detached, which closing the session makes it
  do); a heartbeat that finds no handler attached ends the membership too.
* Once open, a session keeps of its first request only the address and path
  (:func:`broker.transports.owned_socket.lean_connection_info`), whatever
  its transport, refused or not: not the headers and arguments, up to 64 KB
  a session for as long as it lives.

(``server``, here, is sockjs-tornado's name for a session's router.)
"""

from sockjs.tornado import session
from sockjs.tornado.proto import HEARTBEAT
from sockjs.tornado.util import bytes_to_str

from broker.core.backlog import Backlog
from broker.protocol import close_codes, frames
from broker.transports.owned_socket import lean_connection_info


class BrokerSession(session.Session):
    """A SockJS session whose send queue is a backlog, and whose heartbeats
    come from the router's heartbeat wheel (see the module's rules)."""

    def __init__(self, conn, server, session_id, expiry=None):
        super().__init__(conn, server, session_id, expiry)
        self.send_queue = Backlog()

    def verify_state(self):
        opening = self.state == session.CONNECTING
        super().verify_state()
        if opening and self.conn_info is not None:
            self.conn_info = lean_connection_info(self.conn_info)

    def start_heartbeat(self):
        wheel = self.server.node.heartbeats
        if wheel is None:
            super().start_heartbeat()
        else:
            # Joining again restarts the delay, as a new timer would.
            wheel.discard(self)
            wheel.add(self)

    def stop_heartbeat(self):
        wheel = self.server.node.heartbeats
        if wheel is None:
            super().stop_heartbeat()
        else:
            wheel.discard(self)

    def heartbeat_due(self):
        if self.handler is None:
            self.stop_heartbeat()
        else:
            self.handler.send_pack(HEARTBEAT)

    def take_send(self, messages):
        """Take the ``messages`` of a send (xhr_send, jsonp_send) of this open
        session; False if one was too big for the room, which closed the session
        (``MESSAGE_TOO_BIG``): the send is then answered 413, as one over the size."""
        self.on_messages(messages)
        return not (self.is_closed and self.close_reason == close_codes.MESSAGE_TOO_BIG)

    def write_batch(self, batch, key):
        """Take the room's ``batch`` (of a conflating ``key``, or None); False
        when the queue is over its bound (see the module's rules)."""
        handler = self.handler
        queue = self.send_queue
        if handler is not None and handler.active and not queue.chunks:
            handler.send_pack(batch.sockjs_frame)
            return True
        if not queue.offer(batch.sockjs_body, key, self.server.rules.max_buffer):
            return False
        self.flush()
        return True

    def send_jsonified(self, msg, stats=True):
        """sockjs-tornado's send of one message's JSON text ``msg``, whatever the bound."""
        self.send_queue.append(bytes_to_str(msg))
        self.flush()
        if stats:
            self.stats.on_pack_sent(1)

    def flush(self):
        """Everything queued, in one frame, to the handler attached if it waits for one."""
        handler = self.handler
        if handler is None or not handler.active or not self.send_queue.chunks:
            return
        handler.send_pack(frames.message_frame(",".join(self.send_queue.take_all())))
