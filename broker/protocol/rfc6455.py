"""The server's side of RFC 6455, without I/O: the handshake's answer, the client's frames, and the answers to them.

Rules this module keeps:

* Nothing here touches a socket or a clock. :func:`handshake_refusal` and
  :func:`accept_value` decide the answer to an upgrade request from its
  headers; a :class:`ServerProtocol` is fed the bytes read from one
  connection (:meth:`~ServerProtocol.receive_data`), returns what they
  mean as events (:meth:`~ServerProtocol.events_received`), and keeps the
  control frames due in answer, or sent on its own (``send_close``,
  ``send_ping``, ``send_pong``), until the caller takes them
  (:meth:`~ServerProtocol.data_to_send`, :meth:`~ServerProtocol.close_to_send`),
  as python-websockets' ``Protocol`` does. The caller does the I/O.
* Events are ``(kind, value)`` tuples, in the order the frames came: TEXT
  with the message as ``str``, BINARY with ``bytes``, PING and PONG with
  their payload, CLOSE with ``(code, reason)`` (code 1005 when the client
  gave none), and last, if the client broke the protocol, FAIL with the
  ``(code, reason)`` to close with. After CLOSE or FAIL nothing is parsed,
  and ``ended`` says which of the two it was.
* A client's frame is masked, sets no reserved bit, uses no reserved
  opcode; a control frame is final and carries at most 125 bytes; a
  continuation follows a fragment, and a new message does not interrupt
  one. Breaking any of these fails with 1002; a message over ``max_size``
  bytes (its fragments together) with 1009, as soon as its header says so;
  text that is not UTF-8 with 1007. No extension is ever negotiated.
* A protocol is failed as early as the bytes allow: a frame out of order
  (a continuation of nothing, a new message inside a fragmented one) as soon
  as its header is read, and text as soon as the bytes received so far cannot
  begin valid UTF-8, in a fragment or in a frame still arriving, not when
  the message is complete (RFC 6455 section 8.1).
* A message's fragments are joined as they come, in one buffer of at most
  ``max_size`` bytes, however many fragments there are (empty ones too).
  Text checked before its message is complete is checked once (one
  incremental decoder per message, fed each byte once) and decoded once, whole.
* :meth:`~ServerProtocol.events_received` parses at most ``budget`` bytes' worth of
  frames per call, each frame counting FRAME_COST more, so one connection
  flooding small frames gets no more of the event loop than one sending
  large ones; ``more`` says that whole frames may be left for the next call.
* Each event's answer is due as the caller takes the event, not before: so
  what the caller sends while handling the events before it goes out first,
  as it would had the frames come one by one. A PING is answered with a PONG
  of its payload; a PONG ends ``awaiting_pong`` (which ``send_ping`` sets); a
  CLOSE with a close frame of its code (without its reason; none for 1005),
  and a FAIL with one of its code and reason (RFC 6455 sections 5.5.1, 7.1.7).
* The server's data frames are not this class's: the broadcasts' frames are
  built once for every subscriber (:mod:`broker.protocol.batch`) and the
  session's own by :func:`broker.protocol.frames.websocket_frame`, and both
  go straight to the socket, which writes nothing after the close frame.
* The state: OPEN; CLOSING once the server's close frame is due
  (:meth:`~ServerProtocol.send_close`), the client's awaited; CLOSED once the
  client's side has ended (its CLOSE or a FAIL, taken) and the answer, if one
  was owed, is due. One close frame at most is ever sent, and nothing after
  it: a ping, a pong or another close is then dropped.
* A pong waits while the caller's writes are behind (the ``behind`` of
  :meth:`~ServerProtocol.data_to_send`), and a later ping's replaces it: one
  answer for the latest ping, once the writes have caught up (RFC 6455
  section 5.5.3), so a client that pings without reading queues nothing.
"""

import base64
import codecs
import hashlib
import struct

from broker.protocol.close_codes import INVALID_UTF8, MESSAGE_TOO_BIG, PROTOCOL_ERROR
from broker.protocol.frames import websocket_frame

TEXT = 0x1
BINARY = 0x2
CLOSE = 0x8
PING = 0x9
PONG = 0xA
FAIL = -1

OPEN = "open"
CLOSING = "closing"
CLOSED = "closed"

NO_STATUS = 1005
FRAME_COST = 512

_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
_CONTINUATION = 0x0
_DEFINED_OPCODES = frozenset((_CONTINUATION, TEXT, BINARY, CLOSE, PING, PONG))
_UNPACK_16 = struct.Struct("!H").unpack_from
_UNPACK_64 = struct.Struct("!Q").unpack_from
_MAX_CONTROL = 125
_UTF8_CHECKER = codecs.getincrementaldecoder("utf-8")


def _sendable_code(code):
    """Whether a close frame may carry ``code`` (RFC 6455 section 7.4)."""
    return 1000 <= code <= 1003 or 1007 <= code <= 1014 or 3000 <= code <= 4999


def handshake_refusal(headers):
    """Why the upgrade request with ``headers`` (a case-insensitive mapping)
    cannot be accepted, as ``(status, body, extra headers)``, or None.

    The checks and answers are sockjs-tornado's and Tornado's, in their order
    (the SockJS protocol test suite checks the first two)."""
    if headers.get("Upgrade", "").lower() != "websocket":
        return 400, 'Can "Upgrade" only to "WebSocket".', {"Connection": "Close"}
    if "upgrade" not in (part.strip().lower() for part in headers.get("Connection", "").split(",")):
        return 400, '"Connection" must be "Upgrade".', {"Connection": "Close"}
    if headers.get("Sec-WebSocket-Version") != "13":
        return 426, "", {"Sec-WebSocket-Version": "13"}
    if not headers.get("Host") or not headers.get("Sec-WebSocket-Key"):
        return 400, "Missing/Invalid WebSocket headers", {}
    return None


def accept_value(key):
    """The ``Sec-WebSocket-Accept`` answer to the client's ``key`` (str)."""
    return base64.b64encode(hashlib.sha1(key.encode("latin-1") + _GUID).digest()).decode()


def close_payload(code, reason=""):
    """The payload of a close frame: ``code`` and ``reason``, or nothing for
    NO_STATUS (a close frame that answers one without a code). A reason too
    long for a control frame is cut at a character's boundary, so it stays UTF-8."""
    if code == NO_STATUS:
        return b""
    encoded = reason.encode()
    if len(encoded) > _MAX_CONTROL - 2:
        encoded = encoded[:_MAX_CONTROL - 2].decode("utf-8", "ignore").encode()
    return struct.pack("!H", code) + encoded


_PING_FRAME = websocket_frame(b"", PING)


def _unmask(payload, mask):
    length = len(payload)
    if not length:
        return b""
    repeated = (mask * (length // 4 + 1))[:length]
    return (int.from_bytes(payload, "little") ^ int.from_bytes(repeated, "little")).to_bytes(length, "little")


class ServerProtocol:
    """One client's frames as events, and the server's control frames; see the module's rules."""

    __slots__ = ("max_size", "more", "ended", "state", "awaiting_pong", "_buffer", "_fragments",
                 "_fragment_opcode", "_fragment_size", "_checker", "_checked", "_writes", "_pong", "_close_frame")

    def __init__(self, max_size):
        self.max_size = max_size
        self.more = False
        # How the client's side ended: CLOSE (its close frame) or FAIL; None while it has not.
        self.ended = None
        self.state = OPEN
        self.awaiting_pong = False
        self._buffer = bytearray()
        self._fragments = None
        self._fragment_opcode = 0
        self._fragment_size = 0
        # The UTF-8 check of the text message in progress, when it began
        # before the message was complete, and how many payload bytes of the
        # frame at the buffer's head it has taken.
        self._checker = None
        self._checked = 0
        # What is due to the client: pings, the payload of the ping to answer, the close frame.
        self._writes = []
        self._pong = None
        self._close_frame = None

    # The client's side.

    def receive_data(self, data):
        """Take ``data``, bytes read from the client; after CLOSE or FAIL they are dropped."""
        if self.ended is None:
            self._buffer += data

    @property
    def buffered(self):
        """Bytes received and not parsed yet."""
        return len(self._buffer)

    def events_received(self, budget):
        """The events of the whole frames received, up to ``budget``, in order;
        each one's answer is due as the caller takes it (see the rules)."""
        return self._answered(self._parse(budget))

    def _answered(self, events):
        for event in events:
            kind = event[0]
            if kind == PING:
                self.send_pong(event[1])
            elif kind == PONG:
                self.awaiting_pong = False
            elif kind == CLOSE:
                self._answer(event[1][0], "")
            elif kind == FAIL:
                self._answer(*event[1])
            yield event

    def _answer(self, code, reason):
        """The client's side has ended: a close frame is due unless the server's was sent."""
        self.send_close(code, reason)
        self.state = CLOSED

    # The server's side.

    def send_close(self, code=1000, reason=""):
        """Make the close frame of ``code`` and ``reason`` due, unless one was
        (a reason too long is cut: :func:`close_payload`); a pong still due is dropped."""
        if self.state != OPEN:
            return
        self.state = CLOSING
        self._close_frame = websocket_frame(close_payload(code, reason), CLOSE)
        self._pong = None

    def send_ping(self):
        """Make an empty ping due, and await its pong; once a close frame is
        due, only await: a client that answers nothing is cut by the ping
        timeout as by the close's."""
        self.awaiting_pong = True
        if self.state == OPEN:
            self._writes.append(_PING_FRAME)

    def send_pong(self, payload):
        """Make a pong of ``payload`` due, in place of one still due; nothing once a close frame is."""
        if self.state == OPEN:
            self._pong = payload

    def data_to_send(self, behind=False):
        """The pings and the pong due, as frames to write in this order, and
        forgotten; the pong stays due while the caller's writes are ``behind``."""
        writes = self._writes
        self._writes = []
        if self._pong is not None and not behind:
            writes.append(websocket_frame(self._pong, PONG))
            self._pong = None
        return writes

    def close_to_send(self):
        """The close frame due, once (then None): the last frame the server writes."""
        frame = self._close_frame
        self._close_frame = None
        return frame

    # Parsing.

    def _parse(self, budget):
        buffer = self._buffer
        size = len(buffer)
        pos = 0
        out = []
        while size - pos >= 2 and budget > 0 and self.ended is None:
            first = buffer[pos]
            second = buffer[pos + 1]
            opcode = first & 0x0F
            if first & 0x70:
                return self._fail(out, PROTOCOL_ERROR, "reserved bits set")
            if opcode not in _DEFINED_OPCODES:
                return self._fail(out, PROTOCOL_ERROR, "reserved opcode")
            if not second & 0x80:
                return self._fail(out, PROTOCOL_ERROR, "unmasked client frame")
            length = second & 0x7F
            start = pos + 2
            if length == 126:
                if size - start < 2:
                    break
                length = _UNPACK_16(buffer, start)[0]
                start += 2
            elif length == 127:
                if size - start < 8:
                    break
                length = _UNPACK_64(buffer, start)[0]
                start += 8
            final = first & 0x80
            if opcode >= CLOSE:
                if length > _MAX_CONTROL or not final:
                    return self._fail(out, PROTOCOL_ERROR, "fragmented or oversized control frame")
            elif opcode == _CONTINUATION:
                if self._fragments is None:
                    return self._fail(out, PROTOCOL_ERROR, "continuation of no message")
                if length + self._fragment_size > self.max_size:
                    return self._fail(out, *MESSAGE_TOO_BIG)
            elif self._fragments is not None:
                return self._fail(out, PROTOCOL_ERROR, "a new message inside a fragmented one")
            elif length > self.max_size:
                return self._fail(out, *MESSAGE_TOO_BIG)
            end = start + 4 + length
            if end > size:
                if self._text_frame(opcode) and not self._check_partial(buffer, start, size):
                    return self._fail(out, *INVALID_UTF8)
                break
            payload = _unmask(buffer[start + 4:end], bytes(buffer[start:start + 4]))
            pos = end
            budget -= length + FRAME_COST
            if opcode >= CLOSE:
                if not self._control(out, opcode, payload):
                    break
            elif not self._data(out, opcode, final, payload):
                break
        del buffer[:pos]
        self.more = budget <= 0 and len(buffer) >= 2 and self.ended is None
        return out

    def _text_frame(self, opcode):
        """Whether a data frame with ``opcode`` (in order) carries text."""
        return opcode == TEXT or (opcode == _CONTINUATION and self._fragment_opcode == TEXT)

    def _check_partial(self, buffer, start, size):
        """Check the text of the frame whose mask is at ``start``, received up
        to ``size``; False if it cannot be UTF-8 whatever follows."""
        begin = start + 4 + self._checked
        if begin >= size:
            return True
        shift = self._checked % 4
        mask = bytes(buffer[start + shift:start + 4]) + bytes(buffer[start:start + shift])
        self._checked += size - begin
        return self._check(_unmask(buffer[begin:size], mask))

    def _check(self, data):
        if self._checker is None:
            self._checker = _UTF8_CHECKER()
        try:
            self._checker.decode(data)
        except UnicodeDecodeError:
            return False
        return True

    def _data(self, out, opcode, final, payload):
        checked, self._checked = self._checked, 0
        if not final:
            if opcode != _CONTINUATION:
                self._fragments = bytearray()
                self._fragment_opcode = opcode
            if self._fragment_opcode == TEXT and not self._check(payload[checked:]):
                self._fail(out, *INVALID_UTF8)
                return False
            self._fragments += payload
            self._fragment_size += len(payload)
            return True
        if opcode == _CONTINUATION:
            opcode = self._fragment_opcode
            payload = bytes(self._fragments + payload)
            self._fragments = None
            self._fragment_size = 0
        self._checker = None
        if opcode == TEXT:
            try:
                payload = payload.decode("utf-8")
            except UnicodeDecodeError:
                self._fail(out, *INVALID_UTF8)
                return False
        out.append((opcode, payload))
        return True

    def _control(self, out, opcode, payload):
        if opcode != CLOSE:
            out.append((opcode, payload))
            return True
        if not payload:
            code, reason = NO_STATUS, ""
        elif len(payload) < 2 or not _sendable_code(_UNPACK_16(payload, 0)[0]):
            self._fail(out, PROTOCOL_ERROR, "invalid close code")
            return False
        else:
            code = _UNPACK_16(payload, 0)[0]
            try:
                reason = payload[2:].decode("utf-8")
            except UnicodeDecodeError:
                self._fail(out, *INVALID_UTF8)
                return False
        out.append((CLOSE, (code, reason)))
        self._end(CLOSE)
        return False

    def _fail(self, out, code, reason):
        out.append((FAIL, (code, reason)))
        self._end(FAIL)
        self.more = False
        return out

    def _end(self, how):
        self.ended = how
        self._buffer = bytearray()
        self._fragments = None
        self._checker = None
