"""One load client's side of a websocket, SockJS or raw, as a state machine without I/O.

Rules (the sans-I/O shape of python-websockets):

- :class:`ClientProtocol` never touches a socket or a clock: the caller feeds it the bytes it
  read, acts on the events it returns, and writes what :meth:`~ClientProtocol.data_to_send`
  gives. Send times are passed in.
- Events, in order: :data:`OPENED` (the handshake answered and, over SockJS, the open frame
  in), :class:`Delivered` (one per read: the messages counted, and the client's own still
  pending, as ``(seq, sent_us)``), :class:`Closed`; nothing follows Closed. A listener sends
  nothing; its "own" messages are the feed's, every one timed. A ``first_message`` (a private
  room's token) is queued as the SockJS open frame is read, before anything else is sent.
- Messages are counted, never JSON-decoded: frames are parsed in place by offsets. This is
  the load client's hot path: one read, one pass, one Delivered.
"""

from typing import NamedTuple, Sequence, Tuple

from loadtest.framing import payload, websocket_frames

_SOCKJS_ARRAY = payload.SOCKJS_ARRAY
_SOCKJS_OPEN = payload.SOCKJS_OPEN
_SOCKJS_CLOSE = payload.SOCKJS_CLOSE
_OP_TEXT = websocket_frames.OP_TEXT
_OP_PING = websocket_frames.OP_PING
_OP_CLOSE = websocket_frames.OP_CLOSE
_DATA_OPCODES = (websocket_frames.OP_TEXT, websocket_frames.OP_BINARY, websocket_frames.OP_CONTINUATION)


class Opened:
    """The connection is open: messages can go both ways."""

    __slots__ = ()

    def __repr__(self):
        return "OPENED"


OPENED = Opened()
# The reason a session ends when the server answers one of its requests with a new open frame.
LOST_SESSION = "server lost session"


class Delivered(NamedTuple):
    """Messages that arrived in one read: how many, and this client's own still pending."""

    count: int
    own: Sequence[Tuple[int, int]]


class Closed(NamedTuple):
    """The connection is over, for ``reason``."""

    reason: str


# The hot path's helpers, looked up once. Most reads bring only messages of
# others: their events, immutable, are made once and shared, ``_ONLY_DELIVERED[n]``
# for n messages (below _SHARED_COUNTS); any other Delivered is made without
# NamedTuple's Python-level __new__ (``_new_delivered(Delivered, (count, own))``).
_SHARED_COUNTS = 1024
_ONLY_DELIVERED = [()] + [(Delivered(count, ()),) for count in range(1, _SHARED_COUNTS)]
_new_delivered = tuple.__new__
_parse_frames = websocket_frames.parse_frames


def _take_pending(pending, found, own):
    """``own`` (a list or None) with the ``(seq, sent_us)`` of ``found`` that were
    still in ``pending`` (taken out of it), or all of them if ``pending`` is None (a listener)."""
    for mine in found:
        if pending is None or pending.pop(mine[0], None) is not None:
            if own is None:
                own = []
            own.append(mine)
    return own


def tally_sockjs_frame(protocol, frame, count, own, events):
    """Add the SockJS ``frame`` (``buffer[start:end]``) to one read's ``count`` and ``own`` (a list or
    None), returned: an array's messages counted, ``protocol``'s own taken from ``pending`` (none
    for a ``marker`` of None); the first open frame appends :data:`OPENED` to ``events`` (after a
    Delivered of what came before) and queues ``protocol``'s ``first_message`` if it has one; a later
    open frame or a close frame closes ``protocol``."""
    buffer, start, end = frame
    kind = buffer[start]
    if kind == _SOCKJS_ARRAY:
        count += protocol.count_messages(buffer, start, end)
        if protocol.marker is not None and buffer.find(protocol.marker, start, end) >= 0:
            own = _take_pending(protocol.pending, payload.own_messages(buffer, protocol.marker, start, end), own)
    elif kind == _SOCKJS_OPEN:
        if protocol.opened:
            # The server opened a new session under this one's id: it had lost this one
            # (expired, or a broker restarted on its port). sockjs-client closes so too.
            protocol.close(LOST_SESSION)
        else:
            protocol.opened = True
            if protocol.first_message is not None:
                protocol.send_text(protocol.first_message)
            if count:
                events.append(_new_delivered(Delivered, (count, own or ())))
                count, own = 0, None
            events.append(OPENED)
    elif kind == _SOCKJS_CLOSE:
        protocol.close("SockJS close " + payload.sockjs_close_reason(buffer, start, end))
    return count, own


def events_of_read(protocol, count, own, events):
    """The events of one read: ``events``, then a Delivered of ``count`` messages and
    ``own``, then Closed if ``protocol`` has closed (a shared event when that is all)."""
    if not (events or own or protocol.closed_reason is not None) and count < _SHARED_COUNTS:
        return _ONLY_DELIVERED[count]
    if count:
        events.append(_new_delivered(Delivered, (count, own or ())))
    if protocol.closed_reason is not None:
        events.append(Closed(protocol.closed_reason))
    return events


class ClientSide:
    """What a load client's protocol is, whatever its transport: ``pending`` maps the sequence
    number of each own message not yet back to its send time in microseconds (None for a
    listener, which times every message of its ``marker``); ``outgoing``, the bytes waiting
    for :meth:`data_to_send`; ``positions``: messages are counted in position envelopes;
    ``first_message``: a message (needing no JSON escapes, untimed) sent as the session opens, or None."""

    first_message = None

    def __init__(self, client_id, marker, positions):
        self.client_id = client_id
        self.count_messages = payload.count_positioned_messages if positions else payload.count_sockjs_messages
        self.marker = marker
        self.pending = {}
        self.seq = 0
        self.closed_reason = None
        self.opened = False

    def data_to_send(self):
        """The bytes to write (on the receiving connection) now, ``b""`` when there are none."""
        data = b"".join(self.outgoing)
        self.outgoing = []
        return data

    @classmethod
    def listener(cls, *args):
        """A client that only listens, timing every message of the feed; ``args``: the constructor's after the id."""
        protocol = cls(payload.FEED_ID, *args)
        protocol.pending = None
        return protocol

    @property
    def alive(self):
        return self.closed_reason is None

    def close(self, reason):
        """End the client for ``reason`` (the first reason given stays); its :class:`Closed` event."""
        if self.closed_reason is None:
            self.closed_reason = reason
        return Closed(self.closed_reason)


class ClientProtocol(ClientSide):
    """Client ``client_id`` of one websocket to ``path`` on ``host`` (``"127.0.0.1:8080"``):
    ``sockjs``, the SockJS websocket transport (an open frame first, messages in ``a[...]``
    arrays); otherwise a raw websocket, one message per text frame."""

    def __init__(self, client_id, host, path, sockjs=True, positions=False):
        super().__init__(client_id, payload.sockjs_marker(client_id) if sockjs else payload.raw_marker(client_id),
                         positions)
        self.sockjs = sockjs
        self._key = websocket_frames.new_key()
        self._handshaken = False
        self._buffer = b""
        self._fragments = None
        self.outgoing = [websocket_frames.handshake_request(host, path, self._key)]

    def send(self, sent_us):
        """Queue this client's next message, sent at ``sent_us``; returns its sequence number."""
        self.seq += 1
        self.pending[self.seq] = sent_us
        self.send_text(payload.message(self.client_id, self.seq, sent_us))
        return self.seq

    def send_text(self, message):
        """Queue ``message`` (bytes needing no JSON escapes), untimed: over SockJS, in an array of its own."""
        self.outgoing.append(websocket_frames.client_frame(payload.sockjs_send_payload(message) if self.sockjs
                                                           else message))

    def receive_data(self, data):
        """The events the bytes ``data`` bring, in order: a sequence, most often of one :class:`Delivered`."""
        if self._buffer:
            data = self._buffer + data
        if not self._handshaken or self.closed_reason is not None:
            return self._handshake(data)
        try:
            frames, consumed = _parse_frames(data)
        except websocket_frames.ProtocolError as exc:
            return [self.close(str(exc))]
        self._buffer = data[consumed:]
        events = []
        count = 0
        own = None
        for opcode, fin, start, end in frames:
            if opcode == _OP_TEXT and fin:
                message = data
            elif opcode in _DATA_OPCODES:  # a fragment, or a binary message
                message = self._fragment(opcode, fin, data[start:end])
                if message is None:
                    if self.closed_reason is None:
                        continue
                    break
                start, end = 0, len(message)
            elif opcode == _OP_PING:
                self.outgoing.append(websocket_frames.client_frame(data[start:end], websocket_frames.OP_PONG))
                continue
            elif opcode == _OP_CLOSE:
                self.close("websocket closed by the server")
                break
            else:
                continue
            if not self.sockjs:
                count += 1
                mine = payload.own_raw_message(message, self.marker, start, end)
                if mine is not None:
                    own = _take_pending(self.pending, (mine,), own)
                continue
            count, own = tally_sockjs_frame(self, (message, start, end), count, own, events)
            if self.closed_reason is not None:
                break
        return events_of_read(self, count, own, events)

    def _handshake(self, data):
        """The events of ``data`` before the handshake answer is in (or after the end: none)."""
        if self.closed_reason is not None:
            return []
        head_end = data.find(b"\r\n\r\n")
        if head_end < 0:
            self._buffer = data
            return []
        self._buffer = b""
        try:
            websocket_frames.check_handshake_response(data[:head_end], self._key)
        except websocket_frames.ProtocolError as exc:
            return [self.close(str(exc))]
        self._handshaken = True
        events = []
        if not self.sockjs:
            self.opened = True
            events.append(OPENED)
        events.extend(self.receive_data(data[head_end + 4 :]))
        return events

    def _fragment(self, opcode, fin, chunk):
        """The whole message once its last fragment is in, else None (closed if out of order)."""
        if opcode != websocket_frames.OP_CONTINUATION:
            self._fragments = []
        if self._fragments is None:
            self.close("continuation frame without a first fragment")
            return None
        self._fragments.append(chunk)
        if not fin:
            return None
        message = b"".join(self._fragments)
        self._fragments = None
        return message
