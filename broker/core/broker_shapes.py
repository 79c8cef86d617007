"""The shapes of the broker's own messages, which no backend's or client's message may take.

Rules this module keeps:

* Beside the room's messages the broker speaks in two shapes of its own, each
  a JSON object named by a top-level member (:data:`MEMBERS`): a counter's
  total, ``{"counter": NAME, "value": "21.50"}`` (:mod:`broker.core.counters`),
  and the audience, ``{"audience": N}`` (:mod:`broker.core.audience`). A
  message that is such an object, whatever else it holds, is in the broker's
  shape (:func:`in_broker_shape`): a backend's is refused with 422
  (:mod:`broker.ops.api`), a client's closes its session with 1007
  (:mod:`broker.transports.subscriber`), before it costs anything else.
* So is a string whose text is such an object: the plain websocket sends a
  string as its text, which its page reads as JSON, the broker's own bytes.
  A string is read as JSON only when it starts with ``{`` (after JSON's
  whitespace) and holds a member's name or a backslash (which could escape
  one), so any other costs a match and a search; a text nested too deeply to
  read here counts as in the broker's shape, since a page's parser may read it.
* What else the broker says is never a room message: with positions every
  room message is under ``"d"`` and the broker's start, gap and announcement
  are envelopes of their own (``{"c": ...}``, ``{"a": ...}``,
  :mod:`broker.protocol.positions`); without positions a client is told no
  start or gap, and a close is SockJS's ``c[...]`` frame or a websocket's
  close frame, which no message is.
"""

import json
import re

from broker.core import audience, counters

MEMBERS = (counters.MEMBER, audience.KEY)
REFUSAL = ("a JSON object with a top-level %s member, or a text that is one, is the broker's own message "
           "(a counter's total, the audience): change a counter with ?key=NAME&op=add"
           % " or ".join('"%s"' % member for member in MEMBERS))
_OBJECT_TEXT = re.compile(r"[ \t\n\r]*\{")
_READ_FOR = MEMBERS + ("\\",)


def in_broker_shape(message):
    """Whether ``message`` (a JSON value) is, or is a string whose text is, an object
    with a member of :data:`MEMBERS` at its top level."""
    if type(message) is str:
        if _OBJECT_TEXT.match(message) is None or not any(word in message for word in _READ_FOR):
            return False
        try:
            message = json.loads(message)
        except RecursionError:
            return True
        except ValueError:
            return False
    return type(message) is dict and any(member in message for member in MEMBERS)
