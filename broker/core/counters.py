"""Counters the broker keeps: exact decimal totals that backends add to, and that never go back.

A live counter ("money raised") fed by several backends cannot be a value each
backend publishes: their totals race, and a retry counts twice or not at all.
``POST /publish?key=NAME&op=add`` with an amount as its body has the broker add
it to the counter's total and send the new total to the room; ``op=max`` takes
the body only if it is more than the total. Rules this module keeps:

* Money is decimal: an amount is written ``-?D+(.D+)?`` with at most
  :data:`MAX_INTEGER_DIGITS` digits before the point and :data:`MAX_SCALE`
  after it, no exponent, no sign but ``-``; a total is held to the same
  digits. Nothing on the way is binary floating point: amounts are read as
  :class:`decimal.Decimal` here, and added as whole numbers of millionths in
  a cluster's Redis (:func:`units`), which holds 64-bit integers exactly.
* A total is shown with as many decimals as the most precise amount it took
  (``25`` then ``-3.50``: ``"21.50"``), and travels as a JSON string: a
  browser would read a JSON number as a double, which cannot hold every
  decimal. ``op=max`` with an amount not above the total changes nothing,
  its decimals included, and sends nothing.
* What viewers receive is the broker's own object, :func:`message`:
  ``{"counter": NAME, "value": "21.50"}``, a message of the conflating key
  :func:`conflating_key` (:mod:`broker.core.conflation`): a viewer late on it
  is sent only the latest total. That key's text has a space, which no
  backend's ``?key=`` may have, and no backend or client message may be an
  object with a ``"counter"`` member (:data:`MEMBER`,
  :mod:`broker.core.broker_shapes`): no message can pass for a counter's. In
  the room the key is a :class:`broker.core.conflation.ConflatingKey` that
  names its counter; its text is read back (:func:`key_of`) only where it
  comes from Redis.
* A room holds at most :func:`most_counters` counters: :data:`MAX_COUNTERS`,
  or fewer, so that every counter's latest message, at its longest
  (:data:`LONGEST_MESSAGE_BYTES`: a name of 64 characters JSON writes in two,
  the longest total, in a position envelope with the longest offset), takes
  at most half of a first batch (``--max-buffer``, :mod:`broker.core.resumes`),
  which has the other half for the rest of what it carries. A new name past
  that is refused (:func:`too_many`), as an amount out of bounds is, changing
  nothing; a cluster's script is given the same bound. The counters are
  then bounded in bytes too: at most ``most_counters x LONGEST_MESSAGE_BYTES``
  in a first batch, and in Redis four fields a counter (``v:``, ``s:``,
  ``o:``, ``m:``), each at most a name and its longest value.
* A counter's state is its total and its scale. :class:`Counters` holds them
  for a broker alone (lost when it stops), and the latest message of each
  counter with its offset, for every broker: a viewer that opens, resumes or
  is told of a gap gets every counter's latest message at once, whatever
  ``--replay``, in offset order with the rest of its first batch
  (:meth:`Counters.merged`).
* No I/O, no clock.
"""

import decimal
import json
import re
from typing import NamedTuple

from broker.core.conflation import MAX_KEY_LENGTH, ConflatingKey
from broker.core.figures import GAUGE, Figure, Metric
from broker.protocol import frames, positions
from broker.protocol.positions import offset_key, sent_size

OPERATIONS = ("add", "max", "set")
QUERY = "op"
MAX_INTEGER_DIGITS = 12
MAX_SCALE = 6
MAX_COUNTERS = 1000
# The member that makes an object a counter's message, the broker's own (see the rules).
MEMBER = "counter"
_KEY_PREFIX = MEMBER + " "
_AMOUNT = re.compile(r"-?([0-9]{1,%d})(?:\.([0-9]{1,%d}))?" % (MAX_INTEGER_DIGITS, MAX_SCALE))
_LIMIT = decimal.Decimal(10) ** MAX_INTEGER_DIGITS
# Wide enough for every total within the bounds, and their sums, exactly.
_CONTEXT = decimal.Context(prec=MAX_INTEGER_DIGITS + MAX_SCALE + 2, traps=[decimal.Inexact, decimal.Overflow])
OVER_BOUNDS = "the total would have more than %d digits before the point" % MAX_INTEGER_DIGITS
# What a cluster's script made of an operation (:mod:`broker.cluster.backplane`), and the text it gives:
# its total's message appended ("offset value"), no change ("offset value" of the total kept), the
# idempotency key seen before (the record kept), or refused, changing nothing (why).
APPENDED, UNCHANGED, SEEN, REFUSED = "appended", "unchanged", "seen", "refused"


class Amount(NamedTuple):
    """An amount as a backend wrote it: its ``value`` and its ``scale`` (decimals written)."""

    value: decimal.Decimal
    scale: int


def operation(text):
    """The operation ``?op=`` names (None: ``set``); ValueError, its text the answer's, for another."""
    if text is None:
        return "set"
    if text not in OPERATIONS:
        raise ValueError("?%s= is one of %s" % (QUERY, ", ".join(OPERATIONS)))
    return text


def amount(text):
    """The :class:`Amount` ``text`` writes; ValueError, its text the answer's, for anything else."""
    text = text.strip()
    match = _AMOUNT.fullmatch(text)
    if match is None:
        raise ValueError("an amount is a decimal number such as 25 or -3.50: at most %d digits before the "
                         "point and %d after, no exponent" % (MAX_INTEGER_DIGITS, MAX_SCALE))
    return Amount(decimal.Decimal(text), len(match.group(2) or ""))


def units(value):
    """``value`` as a whole number of millionths (how a cluster's Redis holds a total)."""
    return int(value.scaleb(MAX_SCALE, _CONTEXT))


def shown(value, scale):
    """The text of a total ``value`` with ``scale`` decimals (``"21.50"``)."""
    return str(value.quantize(decimal.Decimal(1).scaleb(-scale), context=_CONTEXT))


def message(name, value_text):
    """The message the room sends for counter ``name`` at the total ``value_text``."""
    return {MEMBER: name, "value": value_text}


# The longest offset: a Redis stream id, two 64-bit numbers (a room alone counts from 1).
_LONGEST_OFFSET = "%d-%d" % (2 ** 64 - 1, 2 ** 64 - 1)
# A counter's longest message in a first batch, its comma included (see the rules).
LONGEST_MESSAGE_BYTES = len(positions.message(_LONGEST_OFFSET, frames.encode_message(message(
    '"' * MAX_KEY_LENGTH, "-" + "9" * MAX_INTEGER_DIGITS + "." + "9" * MAX_SCALE)))) + 1


def most_counters(first_batch_bytes):
    """How many counters a room holds when a first batch carries at most ``first_batch_bytes``
    (None: no bound): as many longest messages as half of it holds, at most MAX_COUNTERS."""
    if first_batch_bytes is None:
        return MAX_COUNTERS
    return min(MAX_COUNTERS, first_batch_bytes // 2 // LONGEST_MESSAGE_BYTES)


def too_many(most):
    """The refusal of a new counter in a room that holds ``most`` already."""
    return "the room has %d counters already, the most whose totals fit half of a first batch (--max-buffer)" % most


def message_prefix(name):
    """The JSON text of :func:`message` before the total's text (a cluster's script appends it, and ``"}``)."""
    return json.dumps(message(name, ""), separators=(",", ":"))[:-2]


def conflating_key(name):
    """The conflating key of counter ``name``'s messages, a :class:`ConflatingKey` that knows its
    counter, whose text no backend can give (see the rules)."""
    return ConflatingKey(_KEY_PREFIX + name, name)


def key_of(text):
    """The :class:`ConflatingKey` whose text is ``text`` (as a cluster's stream entry holds it):
    a counter's when it is one's, no backend's key having its space."""
    return ConflatingKey(text, text[len(_KEY_PREFIX):] if text.startswith(_KEY_PREFIX) else None)


class Change(NamedTuple):
    """What an operation made of a counter: its ``total`` and ``scale`` after, and whether it ``changed``."""

    total: decimal.Decimal
    scale: int
    changed: bool

    @property
    def value(self):
        """The text of the total after (:func:`shown`)."""
        return shown(self.total, self.scale)


def apply(operation_name, total, scale, given):
    """The :class:`Change` that ``operation_name`` (``add``, ``max``) with the :class:`Amount`
    ``given`` makes of a counter at ``total`` shown with ``scale`` decimals. ValueError,
    changing nothing, for a total out of bounds."""
    if operation_name == "add":
        after = _CONTEXT.add(total, given.value)
        if abs(after) >= _LIMIT:
            raise ValueError(OVER_BOUNDS)
        return Change(after, max(scale, given.scale), True)
    if given.value > total:
        return Change(given.value, max(scale, given.scale), True)
    return Change(total, scale, False)


class Counters:
    """A room's counters, at most ``most`` (:func:`most_counters`): for a broker alone, each
    one's total and scale (:meth:`change`); for every broker, each one's latest message and
    its offset (:meth:`sent`, :meth:`merged`)."""

    def __init__(self, most=MAX_COUNTERS):
        self.most = most
        self._totals = {}
        self._latest = {}

    def __len__(self):
        return len(self._latest)

    def change(self, name, operation_name, given):
        """Apply ``operation_name`` with ``given`` (an :class:`Amount`) to counter ``name`` of a
        broker alone: its :class:`Change`, kept. ValueError, changing nothing, past the bounds."""
        kept = self._totals.get(name)
        if kept is None and len(self._totals) >= self.most:
            raise ValueError(too_many(self.most))
        total, scale = kept or (decimal.Decimal(0), 0)
        change = apply(operation_name, total, scale, given)
        if change.changed:
            self._totals[name] = (change.total, change.scale)
        return change

    def sent(self, name, offset, encoded):
        """The room sent counter ``name``'s message ``encoded`` at ``offset``."""
        self._latest[name] = (offset, encoded)

    def load(self, latest):
        """Take ``latest``, ``[(name, offset, encoded), ...]`` (a cluster's, from Redis): each
        one newer than the message kept for its name replaces it."""
        for name, offset, encoded in latest:
            kept = self._latest.get(name)
            if kept is None or offset_key(offset) > offset_key(kept[0]):
                self._latest[name] = (offset, encoded)

    def restart(self):
        """Forget every counter: the room's history was lost (a cluster's new epoch)."""
        self._totals.clear()
        self._latest.clear()

    def size(self):
        """The bytes the counters' latest messages take in a first batch sent with positions."""
        return sum(sent_size(offset, encoded) for offset, encoded in self._latest.values())

    def merged(self, offsets, encoded):
        """``(offsets, encoded)``, the messages of a first batch, with every counter's latest
        message they lack, in offset order; themselves when no counter lacks."""
        if not self._latest:
            return offsets, encoded
        held = set(offsets)
        missing = [entry for entry in self._latest.values() if entry[0] not in held]
        if not missing:
            return offsets, encoded
        entries = sorted(list(zip(offsets, encoded)) + missing, key=lambda entry: offset_key(entry[0]))
        return [offset for offset, _ in entries], [text for _, text in entries]

    def stats(self):
        """Each counter's latest total, as viewers last received it."""
        return {name: json.loads(encoded)["value"] for name, (_, encoded) in sorted(self._latest.items())}

    FIGURES = (
        Figure("", lambda counters: counters.stats()),
        Figure(None, len, Metric("counters", GAUGE, "Counters the room keeps (POST /publish?key=NAME&op=...)")),
        Figure(None, lambda counters: {name: float(value) for name, value in counters.stats().items()},
               Metric("counter_total", GAUGE, "Each counter's total as viewers last received it (/stats gives it "
                      "exactly)", ("counter",))),
    )
