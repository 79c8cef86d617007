"""The load messages and how a client reads them back without decoding JSON.

A message is the ASCII string ``"<client>:<seq>:<t_us>"``: the sender's id, its sequence
number, its send time in microseconds of the monotonic clock. It needs no JSON escaping, so in
a SockJS frame every message is exactly two ``"``, and a client finds its own by searching for
``"<client>:``. A backend's messages carry the sender id :data:`FEED_ID`, which no client has.
A token message (:func:`token_message`), a private room's key, is the one message sent JSON-escaped.
"""

import json

SOCKJS_OPEN = 0x6F  # o
SOCKJS_ARRAY = 0x61  # a
SOCKJS_CLOSE = 0x63  # c
FEED_ID = -1


def message(client_id, seq, t_us):
    return b"%d:%d:%d" % (client_id, seq, t_us)


def token_message(token):
    """The message ``{"token":"<token>"}`` that hands a broker a JWT, escaped to go in a SockJS array as it is."""
    return json.dumps(json.dumps({"token": token}, separators=(",", ":"))).encode()[1:-1]


def sockjs_send_payload(*messages):
    """The JSON array a SockJS client sends to publish ``messages``."""
    return b'["' + b'","'.join(messages) + b'"]'


def sockjs_marker(client_id):
    """What precedes every message of ``client_id`` inside a SockJS array frame."""
    return b'"%d:' % client_id


def raw_marker(client_id):
    """What starts every message of ``client_id`` on the raw websocket endpoint."""
    return b"%d:" % client_id


def count_sockjs_messages(buffer, start, end):
    """Messages in the SockJS array frame at ``buffer[start:end]``."""
    return buffer.count(b'"', start, end) >> 1


def count_positioned_messages(buffer, start, end):
    """Messages in the SockJS array frame at ``buffer[start:end]`` of a client that asked for positions:
    envelopes ``{"o":"<offset>","d":...}`` (not the broker's ``{"c":...}``)."""
    return buffer.count(b'{"o":', start, end)


def own_messages(buffer, marker, start, end):
    """``(seq, t_us)`` of every message after ``marker`` in ``buffer[start:end]``."""
    found = []
    pos = buffer.find(marker, start, end)
    while pos >= 0:
        seq_start = pos + len(marker)
        seq_end = buffer.find(b":", seq_start, end)
        t_end = buffer.find(b'"', seq_end, end)
        if t_end < 0:
            t_end = end
        found.append((int(buffer[seq_start:seq_end]), int(buffer[seq_end + 1 : t_end])))
        pos = buffer.find(marker, t_end, end)
    return found


def own_raw_message(buffer, marker, start, end):
    """``(seq, t_us)`` if the raw message at ``buffer[start:end]`` starts with ``marker``, else None."""
    if not buffer.startswith(marker, start, end):
        return None
    seq_start = start + len(marker)
    seq_end = buffer.find(b":", seq_start, end)
    return int(buffer[seq_start:seq_end]), int(buffer[seq_end + 1 : end])


def sockjs_close_reason(buffer, start, end):
    """The ``[code,"reason"]`` text of a SockJS close frame."""
    return buffer[start + 1 : end].decode("utf-8", "replace")
