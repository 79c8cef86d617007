"""One load client's side of a SockJS session over an HTTP transport, as a state machine without I/O.

Rules (the shape of :mod:`loadtest.framing.websocket_protocol`, over two connections):

- A session uses two connections, as a browser does: the *receiving* one carries the
  transport's request, answered by a stream or a poll; the *sending* one its sends, one in
  flight at a time, as sockjs-client sends them (messages published meanwhile go together
  in the next send). The caller writes, feeds and tells the close of each.
- Events: those of :class:`~loadtest.framing.websocket_protocol.ClientProtocol`, and
  :data:`NEW_CONNECTION` (drop the receiving connection: what :meth:`~HttpSessionProtocol.data_to_send`
  holds goes on a new one) and :data:`NEW_SEND_CONNECTION` (the next send goes on a new one).
- When a response ends, the receiving request is made again at once, on the same
  connection if it may carry it (counted in ``reopened``). Only the first response brings
  the open frame; one that ends before it closes the client.
- A receiving connection that closes before any byte of an answer, having carried one
  already (a keep-alive race), is retried once on a new one; so is a sending connection
  that closes before its send's answer.
- A send answered with another status than the transport's closes the client, naming it;
  so does a receiving request answered with another than 200.
"""

from loadtest.framing import websocket_protocol, http_framing, payload
from loadtest.framing.http_head import HTTPError
from loadtest.framing.http_responses import Ended, Head, ResponseParser


class NewConnection:
    """A connection of the session is done: the next request goes on a new one."""

    __slots__ = ("sending",)

    def __init__(self, sending):
        self.sending = sending

    def __repr__(self):
        return "NEW_SEND_CONNECTION" if self.sending else "NEW_CONNECTION"


NEW_CONNECTION = NewConnection(False)
NEW_SEND_CONNECTION = NewConnection(True)

_tally = websocket_protocol.tally_sockjs_frame
_events_of_read = websocket_protocol.events_of_read
_bytes = bytes


class HttpSessionProtocol(websocket_protocol.ClientSide):
    """Client ``client_id`` of one SockJS session at path ``session`` on ``host``
    (``"127.0.0.1:8080"``), over ``transport`` (a name of :data:`loadtest.framing.http_framing.HTTP`);
    ``query``: the service URL's, on every request; ``reopened``: receiving requests made
    again (stream reopens, polls after the first)."""

    def __init__(self, client_id, host, session, transport, query="", positions=False):
        super().__init__(client_id, payload.sockjs_marker(client_id), positions)
        self.transport = http_framing.HTTP[transport]
        self.query = query
        self.reopened = 0
        self._host = host
        self._session = session
        self._request = self.transport.receive_request(host, session, query)
        self._responses = ResponseParser()
        self._frames = self.transport.frames()
        self._answered = False  # the receiving connection carried an answer
        self._retried = False  # the receiving request now outstanding is a retry
        self.outgoing = [self._request]
        self._answers = ResponseParser()
        self._queued = []
        self._in_flight = None
        self._send_retried = False
        self.sends = []

    def sends_to_send(self):
        """The bytes to write on the sending connection now (``b""`` when there are none)."""
        data = b"".join(self.sends)
        self.sends = []
        return data

    def send(self, sent_us):
        """Publish this client's next message, sent at ``sent_us``; returns its sequence number."""
        self.seq += 1
        self.pending[self.seq] = sent_us
        self.send_text(payload.message(self.client_id, self.seq, sent_us))
        return self.seq

    def send_text(self, message):
        """Send ``message`` (bytes needing no JSON escapes), untimed: now, or with the next send."""
        self._queued.append(message)
        if self._in_flight is None:
            self._send_queued()

    def receive_data(self, data):
        """The events of ``data``, read on the receiving connection: most often one Delivered."""
        if self.closed_reason is not None:
            return ()
        try:
            return self._received(self._responses.feed(data))
        except HTTPError as exc:
            return [self.close(str(exc))]

    def receive_closed(self):
        """The events of the receiving connection's close."""
        if self.closed_reason is not None:
            return ()
        idle = self._responses.idle
        try:
            events = list(self._received(self._responses.feed_eof()))
        except HTTPError as exc:
            return [self.close(str(exc))]
        if self.closed_reason is not None or events[-1:] == [NEW_CONNECTION]:
            return events
        if idle and self._answered and not self._retried:
            self._retried = True
            events.append(self._new_connection())
        else:
            events.append(self.close("closed by the server"))
        return events

    def send_answer_data(self, data):
        """The events of ``data``, read on the sending connection: none, unless it ends something."""
        if self.closed_reason is not None:
            return ()
        try:
            answers = self._answers.feed(data)
        except HTTPError as exc:
            return [self.close("%s: %s" % (self.transport.send_suffix, exc))]
        events = []
        for answer in answers:
            answer_type = type(answer)
            if answer_type is Head:
                if answer.status != self.transport.send_status:
                    return [self.close("%s answered HTTP %d" % (self.transport.send_suffix, answer.status))]
            elif answer_type is Ended:
                self._in_flight = None
                self._send_retried = False
                if not answer.reusable:
                    self._answers = ResponseParser()
                    events.append(NEW_SEND_CONNECTION)
                if self._queued:
                    self._send_queued()
        return events

    def send_closed(self):
        """The events of the sending connection's close: its send in flight is made again, once."""
        if self.closed_reason is not None or self._in_flight is None:
            self._answers = ResponseParser()
            return ()
        if self._send_retried:
            return [self.close("%s: the connection closed before the answer" % self.transport.send_suffix)]
        self._send_retried = True
        self._answers = ResponseParser()
        self.sends = [self._in_flight]
        return ()

    def _send_queued(self):
        self._in_flight = self.transport.send_request(self._host, self._session, self._queued, self.query)
        self._queued = []
        self.sends.append(self._in_flight)

    def _received(self, pieces):
        """The events of the receiving connection's ``pieces`` (:mod:`loadtest.framing.http_responses`'s events)."""
        events = []
        count = 0
        own = None
        renew = None
        for piece in pieces:
            piece_type = type(piece)
            if piece_type is _bytes:
                frames = self._frames.frames(piece)
            elif piece_type is Head:
                self._answered = True
                self._retried = False
                if piece.status != 200:
                    self.close("HTTP %d on %s" % (piece.status, self.transport.name))
                    break
                continue
            else:
                frames = self._frames.finish()
            for frame in frames:
                count, own = _tally(self, frame, count, own, events)
                if self.closed_reason is not None:
                    break
            if self.closed_reason is not None:
                break
            if piece_type is Ended:
                renew = self._renew(piece.reusable)
        events = _events_of_read(self, count, own, events)
        if renew is not None and self.closed_reason is None:
            events = list(events)
            events.append(renew)
        return events

    def _renew(self, reusable):
        """A receiving response ended: its request again, here if ``reusable`` (None), else :data:`NEW_CONNECTION`."""
        if not self.opened:
            self.close("the %s response ended before the open frame" % self.transport.name)
            return None
        self.reopened += 1
        if reusable:
            self._frames = self.transport.frames()
            self.outgoing.append(self._request)
            return None
        return self._new_connection()

    def _new_connection(self):
        self._responses = ResponseParser()
        self._frames = self.transport.frames()
        self._answered = False
        self.outgoing = [self._request]
        return NEW_CONNECTION
