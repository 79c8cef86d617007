"""Every close the broker sends a client, in one table: its code, its reason, what it means.

Rules this module keeps:

* A close is a ``(code, reason)`` pair, sent as SockJS's ``c[code,"reason"]``
  frame or as an RFC 6455 close frame; every module closes with a name from
  here, never with a literal.
* Codes 1000-1015 are RFC 6455's; 3000-3999 are registered for libraries and
  frameworks, and the broker's own sit there, from 3008 up.
* What a client should do is part of the meaning: "come back" codes are safe
  to retry (after a pause, with jitter); "do not come back as you are" codes
  mean the same client would be refused again.

=====  ===========================  ===========================================
code   name                         meaning, and what a client should do
=====  ===========================  ===========================================
1000   PING_TIMEOUT                 No pong within the ping timeout: reconnect.
1002   PROTOCOL_ERROR               The client broke RFC 6455 (the reason says
                                    how): a client bug, do not retry as is.
1002   INTERRUPTED                  A stream's connection ended before its
                                    response (SockJS's code): the session is
                                    gone; a client asking again reconnects.
1003   BINARY_FRAME                 Binary frames are refused: send text.
1007   INVALID_UTF8                 A text message that is not UTF-8.
1007   INVALID_MESSAGE              A SockJS message that is not JSON.
1007   NOT_A_STRING                 A client's message that is not a JSON
                                    string: only a backend publishes other
                                    JSON values. A client bug.
1007   BROKER_SHAPE                 A client's message whose text is an
                                    object in the broker's own shape (a
                                    counter's total, the audience). A client
                                    bug.
1009   MESSAGE_TOO_BIG              Over ``--max-message-size``: send less.
3008   SLOW_CONSUMER                The client fell ``--max-buffer`` behind or
                                    took nothing for ``--write-timeout``:
                                    reconnect, the replay tail catches it up.
3009   TOO_MANY_MESSAGES            Published over ``--client-rate``: slow down.
3010   SESSIONS_PER_IP              Over ``--max-connections-per-ip``: come back
                                    when another session of this address ends.
3011   MAX_SESSIONS                 The process is full: reconnect, with jitter;
                                    a load balancer may send it elsewhere.
3012   RECONNECT                    The broker is draining (a deploy), or the
                                    connection reached --max-connection-age:
                                    reconnect now, with jitter, to any broker.
3013   ROOM_REFUSED                 The URL's ``rooms=`` broke the rule (a bad
                                    name, none, more than
                                    ``--max-session-rooms``), or the broker
                                    serves no such rooms: do not come back as is.
3014   TOO_MANY_ROOMS               The broker holds ``--max-rooms`` rooms: come
                                    back later, with backoff.
3015   TOKEN_REQUIRED               A session in a private room
                                    (``--private-rooms``) whose first message
                                    was not a token, or that sent none within
                                    :data:`TOKEN_WAIT_S`: send
                                    ``{"token": "<JWT>"}`` first.
3016   TOKEN_REFUSED                A token that is malformed, wrongly signed,
                                    of another subject than the session's, or
                                    that does not name every private room of
                                    the session (:mod:`broker.protocol.tokens`),
                                    or sent to a broker with no token key:
                                    do not come back with it.
3017   TOKEN_EXPIRED                The session's token expired and no fresh
                                    one came in time, or the token it sent
                                    had already: come back with a fresh
                                    token, or stop.
=====  ===========================  ===========================================
"""

from typing import NamedTuple


class Close(NamedTuple):
    code: int
    reason: str


PING_TIMEOUT = Close(1000, "ping timed out")
PROTOCOL_ERROR = 1002
INTERRUPTED = Close(1002, "Connection interrupted")
BINARY_FRAME = Close(1003, "Text frames only")
INVALID_UTF8 = Close(1007, "Invalid UTF-8")
INVALID_MESSAGE = Close(1007, "Invalid message")
NOT_A_STRING = Close(1007, "A client's messages are strings")
BROKER_SHAPE = Close(1007, "A message in the broker's own shape")
MESSAGE_TOO_BIG = Close(1009, "Message too big")
SLOW_CONSUMER = Close(3008, "Slow consumer")
TOO_MANY_MESSAGES = Close(3009, "Too many messages")
SESSIONS_PER_IP = Close(3010, "Too many sessions from your address")
MAX_SESSIONS = Close(3011, "The server is at its session limit")
RECONNECT = Close(3012, "Server draining: reconnect")
ROOM_REFUSED = Close(3013, "Rooms: 1 to 64 of A-Z a-z 0-9 _ - . : each, at most --max-session-rooms")
TOO_MANY_ROOMS = Close(3014, "The server holds too many rooms")
TOKEN_REQUIRED = Close(3015, "A private room: send a token first")
TOKEN_REFUSED = Close(3016, "Token refused")
TOKEN_EXPIRED = Close(3017, "Token expired")

# Seconds a session in a private room has to send its token (TOKEN_REQUIRED past them).
TOKEN_WAIT_S = 10
