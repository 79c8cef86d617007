"""The HTTP transports' connections on their own sockets between requests: polls and sends answered without Tornado.

A polling client (xhr-polling, jsonp-polling) asks again after every answer,
on one keep-alive connection, for as long as its session lives; every HTTP
transport's client sends its messages in requests of their own, each on a
new connection or one idle since the last. Tornado would make for each of
those requests a request object, its headers, a handler, a response and a
log line (about 200 us a poll on CPython, most of a polling client's cost).
Here the handler that answered a poll lets go of the connection
(:class:`PollHandler`), as does the listener for a new connection whose
first request is a send (:func:`answer_first_send`); a
:class:`KeptAliveConnection` answers that send and reads the requests that
follow: a poll it answers itself, as the SockJS session's handler until one
frame has gone, a send it takes and answers at once; anything else it gives
back to Tornado, unread.

Rules this module keeps:

* A connection is kept only when nothing of it is left unsaid: HTTP/1.1,
  kept alive, plain (a TLS connection's bytes cannot be peeked at), with
  nothing read ahead by Tornado; the conformance services, on Tornado's own
  streams, keep none. A new plain connection is taken before the HTTP
  server reads it (:func:`answer_first_send`) only if its first request is a
  send there whole, or not there at all yet.
* A trusted proxy's poll or send names its client, as each of its requests
  does (:class:`broker.transports.client_address.ClientAddressCheck`): the
  connection is that client's from then on, or, the client at its limit, the
  request is answered 503 and the connection closed.
* The next request is peeked at (``MSG_PEEK``), never taken before it is known
  to be a poll (:mod:`broker.protocol.polls`) of an open session that no
  other request serves, or a send (:mod:`broker.protocol.sends`) of an open
  session, from a page the origin policy allows. Anything else, or a request
  not yet whole, goes back to the HTTP server with the socket
  as it is (:attr:`broker.transports.listener.Handover.serve_again`), and is
  answered as if the broker had never held it: a new session, a send it does
  not take, a closed session's close frame, a refusal.
* A poll carries exactly one frame: everything queued for the session in one
  ``a[...]`` frame, at once, or the next frame the session sends (a message,
  a heartbeat, its close). A session closed while a poll's answer is being
  written (``/close`` opens and closes in one go) has its close frame sent to
  the next poll.
* A poll and a send are answered here as Tornado's handler answers them: both
  take the status, headers and body from :mod:`broker.protocol.http_answers`.
* While a poll waits, the client's end closes its session (1002 "Connection
  interrupted"), as with Tornado; a request it sends meanwhile waits in the
  kernel until the answer is written, all of it.
* A send's messages reach its session as Tornado's handler gives them
  (``on_messages``), before its answer is written.
* An answer (a poll's, a send's) must be taken whole within the write
  timeout, however slowly the client reads, or the connection is cut
  (:meth:`broker.transports.owned_socket.OwnedSocket.write_answer`).
* Between requests the connection is timed as Tornado times it: the next
  request's head (a new connection's first) must be whole within the header
  timeout of the end of the answer, written (of the connection's opening),
  given back to the HTTP server or not.
"""

import socket
import time

from sockjs.tornado import transports as base
from tornado import httputil

from broker import _internals
from broker.protocol import http_answers, polls, sends
from broker.protocol.close_codes import INTERRUPTED
from broker.protocol.request_heads import MAX_HEAD_BYTES, read_head
from broker.transports.http_transports import NewSessions, ServiceHeaders, callback_name
from broker.transports.owned_socket import OwnedSocket

# What is peeked at of a connection's next request: a head and a send's body. A longer send
# is Tornado's.
PEEK_BYTES = 2 * MAX_HEAD_BYTES


class KeptAliveConnection(OwnedSocket):
    """A kept-alive connection between its requests, and the session's handler
    while a poll waits; ``handover`` is the listener's
    :class:`broker.transports.listener.Handover` for it."""

    __slots__ = ("active", "_handover", "_poll", "_head")

    def __init__(self, router, sock, handover):
        self.active = False
        self._handover = handover
        self._poll = None
        # The last poll's head: a client sends the same bytes again and again.
        self._head = None
        super().__init__(router, sock, handover.release)
        router.stats.on_conn_opened()
        self._time_next_head()

    # What the SockJS session calls.

    @property
    def name(self):
        """The transport of the poll it serves (``xhr``, ``jsonp``)."""
        return self._poll.transport

    def send_pack(self, message, binary=False):
        """Answer the poll with ``message``, the one frame it carries."""
        if not self.active:
            return
        self.active = False
        self.write_answer(polls.poll_answer(self._poll, message, http_date()))
        self.leave_session()
        self._next_request()

    def session_closed(self):
        self.leave_session()

    # The event loop's side.

    def _read(self):
        data = self._receive(PEEK_BYTES, socket.MSG_PEEK)
        if data is None:
            return
        if self.session is not None or self.behind:
            self.pause_reading(True)  # its turn comes once the poll is answered, and the answer sent
            return
        if self._head is not None and data.startswith(self._head):
            served = self._serve_poll(self._poll, data)
        else:
            served = self._serve(data)
        if not served:
            self._give_back()

    def _serve(self, data):
        """Answer the request ``data`` begins with, or start to; False, having
        read nothing, if it is not this connection's to answer."""
        router = self.router
        head = read_head(data, self._handover.client_header)
        if head is None:
            return False
        poll = polls.poll_of(head, router.prefix)
        if poll is not None:
            return self._serve_poll(poll, data)
        send = sends.send_of(head, data, router.prefix, router.rules.max_message_size)
        if send is None:
            return False
        session = open_session(router, send)
        return session is not None and self.serve_send(send, session)

    def _serve_poll(self, poll, data):
        session = open_session(self.router, poll)
        if session is None or session.handler is not None:
            return False
        if not self._take(poll):
            return True
        if poll is not self._poll:
            self._poll = poll
            self._head = data[:poll.size]
        self.active = True
        session.set_handler(self, False)
        self.session = session
        if session.send_queue:
            session.flush()
        else:
            session.start_heartbeat()
        return True

    def serve_send(self, send, session):
        """Take ``send``, of ``session`` (:func:`open_session`), and answer it. True."""
        if self._take(send):
            self.write_answer(sends.send_answer(send, http_date(), session.take_send(send.messages)))
            self._next_request()
        return True

    def _take(self, request):
        """Read ``request`` (a poll or a send) off the socket; False if the
        connection was cut or its client refused instead."""
        try:
            taken = self._sock.recv(request.size)
        except OSError:
            self.cut()
            return False
        if len(taken) != request.size:  # the kernel gave less than it had shown: no longer HTTP we can follow
            self.cut()
            return False
        if self._handover.timeouts is not None:
            self._handover.timeouts.headers_read(self)
        # The same head as the last poll's names the same client.
        if self._handover.client_header is not None and request is not self._poll:
            refusal = self._handover.reassign(request.named_client)
            if refusal is not None:
                self.pause_reading(True)
                if self.write_last(refusal) and not self.behind:
                    self.cut()
                return False
        return True

    def _next_request(self):
        """An answer is written, or queued: once it is all written, wait for
        the next request (until then, the write timeout times the connection)."""
        if self._sock is not None and not self.behind:
            self._time_next_head()
            self.pause_reading(False)

    def _time_next_head(self):
        """Time the wait for the next request's head."""
        if self._handover.timeouts is not None:
            self._handover.timeouts.reading_headers(self)

    def _give_back(self):
        """Hand the socket, unread, to the HTTP server, the next head's deadline with it."""
        sock = self._sock
        self._sock = None
        self.watch()
        timeouts = self._handover.timeouts
        deadline = None if timeouts is None else timeouts.deadline(self)
        self._forget_timeout()
        self.router.stats.on_conn_closed()
        self._handover.serve_again(sock, deadline)

    def close(self):
        """Close the connection (:class:`broker.transports.request_timeouts.RequestTimeouts` calls this)."""
        self.cut()

    def caught_up(self):
        if self._last_written:
            self.cut()
        elif self.session is None:
            self._next_request()

    def closed(self):
        self._forget_timeout()

    def _forget_timeout(self):
        if self._handover.timeouts is not None:
            self._handover.timeouts.forget(self)

    def received(self, data):
        raise AssertionError("a polling connection peeks")

    def ended(self):
        session = self.session
        if session is not None:
            self.leave_session()
            session.close(*INTERRUPTED)


_date = (0, "")


def http_date():
    """The current time as an HTTP ``Date``, formatted once a second."""
    global _date
    now = int(time.time())
    if now != _date[0]:
        _date = (now, httputil.format_timestamp(now))
    return _date[1]


def open_session(router, request):
    """The open session of ``request`` (a poll or a send) on ``router``, if
    its page's origin is allowed; None otherwise."""
    session = router.get_session(request.session_id)
    if session is None or session.is_closed:
        return None
    if request.origin is not None and not router.rules.origins.allows(request.origin, request.host):
        return None
    return session


def answer_first_send(router, sock, handover):
    """Take ``sock``, a new plain connection to ``router``, as a
    :class:`KeptAliveConnection`: if its first request is a send of an open
    session, there whole, answered at once; if nothing of it is there yet, to
    wait for it. False, having read nothing, if its first request is anything
    else (the HTTP server's)."""
    try:
        data = sock.recv(PEEK_BYTES, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except BlockingIOError:
        data = None
    except OSError:
        return False
    if data is not None:
        # Most first requests open a session or a websocket: those are told from a send at once.
        if b"_send" not in data[:data.find(b"\r\n")]:
            return False
        head = read_head(data, handover.client_header)
        send = None if head is None else sends.send_of(head, data, router.prefix, router.rules.max_message_size)
        session = None if send is None else open_session(router, send)
        if session is None:
            return False
    sock.setblocking(False)
    connection = KeptAliveConnection(router, sock, handover)
    if data is not None:
        connection.serve_send(send, session)
    return True


class PollHandler(NewSessions, ServiceHeaders):
    """Base of the polling transports' request handlers, which open sessions
    and answer as every handler of the service does (:class:`NewSessions`,
    :class:`ServiceHeaders`): a poll carries one frame (see the module's
    rules), and once it is answered its connection goes on as a
    :class:`KeptAliveConnection` if it may."""

    session_ended = False

    def answer(self, form, body):
        """Answer the poll as ``form`` (a :class:`broker.protocol.http_answers.AnswerForm`)
        states, with ``body`` (bytes, the one frame in the transport's form)."""
        self.active = False
        try:
            self.give(form, body)
            self.flush().add_done_callback(self.answered)
        except IOError:
            self.session.delayed_close()

    def session_closed(self):
        self.session_ended = True  # and the response finished
        super().session_closed()

    def answered(self, future):
        session = self.session
        if session is not None:
            session.remove_handler(self)
            self.session = None
        if self.session_ended:
            return
        handover = self.kept_connection()
        self.safe_finish()
        if handover is None:
            return
        stream = self.detach()
        if stream.closed():  # its close released it
            return
        sock, _ = _internals.take_socket(stream)
        KeptAliveConnection(self.server, sock, handover)

    def kept_connection(self):
        """The listener's handover of this request's connection, if it may be kept."""
        request = self.request
        if request.version != "HTTP/1.1" or "close" in request.headers.get("Connection", "").lower():
            return None
        stream = request.connection.stream
        hand_over = getattr(stream, "hand_over", None)
        if hand_over is None or stream.closed() or _internals.read_ahead(stream):
            return None
        return hand_over()


class XhrPollingTransport(PollHandler, base.XhrPollingTransport):
    """xhr-polling's request handler: a connection's first poll, and any a
    :class:`KeptAliveConnection` gives back."""

    def send_pack(self, message, binary=False):
        if self.active:
            self.answer(http_answers.XHR_POLL_ANSWER, http_answers.xhr_poll_body(message))


class JSONPTransport(PollHandler, base.JSONPTransport):
    """jsonp-polling's request handler: one ``/**/callback("frame");`` script
    per request (:func:`broker.protocol.http_answers.jsonp_poll_body`)."""

    def get(self, session_id):
        if callback_name(self) is not None:
            super().get(session_id)

    def send_pack(self, message, binary=False):
        if self.active:
            self.answer(http_answers.JSONP_POLL_ANSWER, http_answers.jsonp_poll_body(self.callback, message))
