"""Wire encodings, as pure functions: SockJS frames and RFC 6455 server frames.

SockJS (protocol 0.3.3) sends text frames: ``o`` open, ``h`` heartbeat,
``a[...]`` a JSON array of messages (built here only, :func:`message_frame`),
``c[code,"reason"]`` close. Messages are JSON-encoded with ``ensure_ascii``
so that no transport (htmlfile, jsonp, eventsource) ever carries a raw
U+2028 or a lone surrogate, and never as
``NaN`` or ``Infinity``, which are not JSON: a browser would drop the whole
frame, and every message coalesced into it.

Rules this module keeps:

* A message's JSON text is ASCII, so its length is its size in bytes: every
  bound on what the room keeps and sends (``--max-message-size``,
  ``--max-buffer``, a first batch) counts ``len()`` of it, escapes included.
  SockJS wants some characters escaped (an emoji is 12 bytes as
  ``\\ud83d\\ude00``): the bound is on those escaped bytes, never on the
  characters a client or a backend sent (:func:`encode_message` refuses a
  message over it, :class:`MessageTooBig`).
* A frame that lands in HTML or JavaScript (htmlfile, jsonp) travels as a
  string literal from :func:`script_string`, which no message can end early,
  and which is still JSON. It escapes what an HTML parser acts on inside a
  ``<script>`` element (``</`` and ``<!--``), not every ``<``: a literal is
  at most :data:`SCRIPT_STRING_GROWTH` times its frame, and 2 bytes more.

A streaming HTTP transport wraps each SockJS frame in its own framing
(:data:`STREAM_FRAMINGS`: a line for xhr-streaming, an event for
eventsource, a ``<script>`` element for htmlfile), and an HTTP/1.1 response
in a chunk of its own (:func:`http_chunk`); like a websocket frame, those
bytes are the same for every client of the transport.

A server's websocket frame is never masked (RFC 6455 section 5.1), so one
built frame can be written to every connection as the same bytes (a
client's frames are read by :mod:`broker.protocol.rfc6455`).
"""

import json
import struct

_encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=True, allow_nan=False)
# What ends a <script> element's text ("</script"), or makes the parser look past its end ("<!--"
# then "<script"), as JSON escapes: "\/" for "/", "\u003c" for "<".
_CLOSING_TAG = ("</", "<\\/")
_COMMENT_OPENING = ("<!--", "\\u003c!--")
SCRIPT_STRING_GROWTH = len(_COMMENT_OPENING[1]) / len(_COMMENT_OPENING[0])
"""The most a frame grows as a script string, per byte: 9 bytes for each ``<!--``; a quote or
a backslash doubles (``\\"``, ``\\\\``), ``</`` takes 3."""

TEXT = 0x1
_FIN = 0x80


def decode_json(text):
    """The value of JSON ``text`` (str or UTF-8 bytes).

    Raises ValueError for anything that is not JSON, including values nested
    too deeply to decode without exhausting the stack.
    """
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


class MessageTooBig(ValueError):
    """A message whose JSON text, as the room keeps and sends it, is over the bound."""


def encode_message(message, max_size=None):
    """Encode one message (any JSON value; browsers send strings) as JSON text,
    ASCII, of at most ``max_size`` bytes (None: any).

    Raises ValueError for what has no JSON text: NaN, infinities, bytes,
    values nested too deeply; :class:`MessageTooBig` for a text over ``max_size``.
    """
    try:
        encoded = _encoder.encode(message)
    except TypeError as error:
        raise ValueError(str(error)) from None
    except RecursionError:
        raise ValueError("nested too deeply") from None
    if max_size is not None and len(encoded) > max_size:
        raise MessageTooBig("its JSON text is %d bytes, escapes included: over %d" % (len(encoded), max_size))
    return encoded


def message_frame(body):
    """The SockJS ``a[...]`` frame of ``body``: messages' JSON texts (:func:`encode_message`)
    joined by commas, or runs of them so joined, joined by commas in turn."""
    return "a[" + body + "]"


def raw_message(encoded):
    """The raw websocket's payload (UTF-8) for a message ``encoded`` by
    :func:`encode_message`: a string as itself, any other value as its JSON."""
    if encoded[:1] == '"':
        return json.loads(encoded).encode()
    return encoded.encode()


def script_string(text):
    """``text`` as a JavaScript string literal that is safe inside an HTML
    ``<script>`` element, and JSON: ASCII escapes (no raw U+2028 or U+2029),
    ``</`` as ``<\\/`` and ``<!--`` as ``\\u003c!--``, so that no message can
    end the element or hide its end (an HTML parser reads no entity in a
    script: ``&`` and ``>`` stay). At most :data:`SCRIPT_STRING_GROWTH`
    times as long as ``text``, and 2 bytes more."""
    return _encoder.encode(text).replace(*_CLOSING_TAG).replace(*_COMMENT_OPENING)


def websocket_frame(payload, opcode=TEXT):
    """One unfragmented, unmasked RFC 6455 frame around ``payload`` (bytes)."""
    length = len(payload)
    if length < 126:
        header = struct.pack("!BB", _FIN | opcode, length)
    elif length <= 0xFFFF:
        header = struct.pack("!BBH", _FIN | opcode, 126, length)
    else:
        header = struct.pack("!BBQ", _FIN | opcode, 127, length)
    return header + payload


STREAM_FRAMINGS = {
    "xhr_streaming": lambda frame: frame + "\n",
    "eventsource": lambda frame: "data: " + frame + "\r\n\r\n",
    "htmlfile": lambda frame: "<script>\np(" + script_string(frame) + ");\n</script>\r\n",
}
"""How each streaming transport carries one SockJS frame (str -> str)."""

LAST_CHUNK = b"0\r\n\r\n"


def http_chunk(data):
    """``data`` (bytes, not empty) as one chunk of an HTTP/1.1 chunked body."""
    return b"%x\r\n%s\r\n" % (len(data), data)


def chunk_size(chunk):
    """The size of the data that ``chunk``, made by :func:`http_chunk`, carries."""
    return int(chunk[:chunk.index(b"\r\n")], 16)


def stream_frame(transport, frame, chunked):
    """The bytes that carry the SockJS ``frame`` on a stream of ``transport``
    (a key of :data:`STREAM_FRAMINGS`), in a chunk of its own if ``chunked``."""
    data = STREAM_FRAMINGS[transport](frame).encode()
    return http_chunk(data) if chunked else data
