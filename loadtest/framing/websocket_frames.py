"""The client side of RFC 6455, without sockets: handshake, masked frames, frame parsing.

The parser does not copy payloads: each complete frame is ``(opcode, fin, start, end)``, its
payload's offsets into the buffer given, so a caller can search it at C speed.
"""

import base64
import hashlib
import random
import struct

from loadtest.errors import LoadTestError
from loadtest.framing.http_head import HTTPError, parse_head

OP_CONTINUATION = 0x0
OP_TEXT = 0x1
OP_BINARY = 0x2
OP_CLOSE = 0x8
OP_PING = 0x9
OP_PONG = 0xA

_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
_PACK_16 = struct.Struct("!H")
_PACK_64 = struct.Struct("!Q")


class ProtocolError(LoadTestError):
    """The server broke RFC 6455 (bad handshake answer, masked or oversized frame)."""


def new_key():
    return base64.b64encode(random.getrandbits(128).to_bytes(16, "big"))


def handshake_request(host, path, key):
    """The HTTP upgrade request for ``path`` on ``host`` (``"127.0.0.1:8080"``)."""
    return (b"GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (path.encode(), host.encode(), key))


def accept_value(key):
    """The ``Sec-WebSocket-Accept`` value a server must answer to ``key``."""
    return base64.b64encode(hashlib.sha1(key + _GUID).digest())


def check_handshake_response(head, key):
    """Raise :class:`ProtocolError` unless ``head`` (status line and headers) accepts ``key``."""
    try:
        status, headers = parse_head(head)
    except HTTPError as error:
        raise ProtocolError("handshake refused: %s" % error) from None
    if status != 101:
        raise ProtocolError("handshake refused: %s" % head.split(b"\r\n", 1)[0].decode("latin-1"))
    if headers.get("sec-websocket-accept", "").encode("latin-1") != accept_value(key):
        raise ProtocolError("handshake answer has a wrong Sec-WebSocket-Accept")


def _mask(payload, mask_key):
    length = len(payload)
    if not length:
        return payload
    repeated = (mask_key * (length // 4 + 1))[:length]
    masked = int.from_bytes(payload, "little") ^ int.from_bytes(repeated, "little")
    return masked.to_bytes(length, "little")


def client_frame(payload, opcode=OP_TEXT):
    """One final, masked client frame carrying ``payload`` (bytes)."""
    length = len(payload)
    first = 0x80 | opcode
    if length < 126:
        header = bytes((first, 0x80 | length))
    elif length < 0x10000:
        header = bytes((first, 0x80 | 126)) + _PACK_16.pack(length)
    else:
        header = bytes((first, 0x80 | 127)) + _PACK_64.pack(length)
    mask_key = random.getrandbits(32).to_bytes(4, "big")
    return header + mask_key + _mask(payload, mask_key)


def parse_frames(buffer, max_payload=1 << 26):
    """``(frames, consumed)``: the complete server frames of ``buffer``, and where the rest begins."""
    size = len(buffer)
    if size > 3:
        # A read that holds exactly one whole unmasked frame, the load client's
        # common case (a paced broadcast), takes this shortcut past the loop.
        first, second = buffer[0], buffer[1]
        if second < 126 and second + 2 == size and second <= max_payload:
            return [(first & 0x0F, first >> 7, 2, size)], size
        if second == 126 and _PACK_16.unpack_from(buffer, 2)[0] + 4 == size and size - 4 <= max_payload:
            return [(first & 0x0F, first >> 7, 4, size)], size
    frames = []
    pos = 0
    while size - pos >= 2:
        first = buffer[pos]
        second = buffer[pos + 1]
        if second & 0x80:
            raise ProtocolError("the server sent a masked frame")
        length = second & 0x7F
        start = pos + 2
        if length == 126:
            if size - start < 2:
                break
            length = _PACK_16.unpack_from(buffer, start)[0]
            start += 2
        elif length == 127:
            if size - start < 8:
                break
            length = _PACK_64.unpack_from(buffer, start)[0]
            start += 8
        if length > max_payload:
            raise ProtocolError("frame of %d bytes exceeds the limit" % length)
        end = start + length
        if end > size:
            break
        frames.append((first & 0x0F, first >> 7, start, end))
        pos = end
    return frames, pos
