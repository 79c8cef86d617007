"""A subscriber that resumes, as the shipped browser client does, counting what it missed or got twice.

Rules (those of ``broker/ops/demo/broker-client.js`` and docs/protocol.rst, with code of its
own: the checker of "nothing missed" shares nothing with the broker it checks):

- It asks for positions; each connection after the first resumes after the newest offset
  it delivered in its epoch, or where its last connection joined, if that is newer.
- A room message (``{"o": offset, "d": message}``) is delivered once: one at or before the
  newest offset delivered in the epoch is dropped as a duplicate, unless it is state sent
  again by design (``replayed``): what follows an ``open`` or a ``gap`` at or before its
  ``o``, or a counter's total, which every connection's first messages carry again.
- A ``gap`` is counted by its reason; the state that follows it is delivered. In another
  epoch every offset starts again.
- Nothing here touches a socket: a protocol hands each SockJS array frame to
  :meth:`ResumingSubscriber.count_frame` in place of counting; what is delivered goes to
  :meth:`ResumingSubscriber.delivered`.
"""

import collections
import json
import urllib.parse

QUERY_POSITIONS = "positions"
QUERY_EPOCH = "epoch"
QUERY_SINCE = "since"
RESUMED = "resumed"
GAP = "gap"
# A frame's text is UTF-8, and decoding it first spares json.loads its guess at the encoding.
_decode = json.JSONDecoder().decode


def offset_key(offset):
    """An offset as it orders: a count (``"41"``) or a Redis stream id (``"1700000000000-3"``)
    as a ``(number, sequence)`` pair, never as text; ValueError for anything else."""
    number, dash, sequence = offset.partition("-")
    if not number.isdigit() or (dash and not sequence.isdigit()):
        raise ValueError("not an offset: %r" % offset[:40])
    return int(number), int(sequence or 0)


def is_counter(message):
    """Whether ``message`` is a counter's total, as the broker sends it (``broker-client.js``'s ``isCounter``)."""
    return isinstance(message, dict) and isinstance(message.get("counter"), str) and \
        isinstance(message.get("value"), str)


class ResumingSubscriber:
    """One subscriber across its connections: ``epoch`` and ``offset`` (the newest delivered), ``gaps``
    by reason, ``duplicates`` and ``replayed`` dropped; ``starts``: how often it was told where it
    starts (``open``, ``resumed`` or a gap), ``on_start`` called at each."""

    on_start = None

    def __init__(self):
        self.epoch = None
        self.offset = None
        self._offset_key = None  # offset_key(offset), kept: every message is compared with it
        self.joined = None
        self.gaps = collections.Counter()
        self.duplicates = 0
        self.replayed = 0
        self.announcements = []
        self.starts = 0
        self._state_until = None

    def query(self):
        """The query to put on the SockJS URL of the next connection."""
        asked = QUERY_POSITIONS + "=1"
        if self.epoch is None:
            return asked
        since = self.joined
        if self.offset is not None and (since is None or offset_key(self.offset) > offset_key(since)):
            since = self.offset
        return asked + "&" + urllib.parse.urlencode({QUERY_EPOCH: self.epoch, QUERY_SINCE: since})

    def receive(self, envelope):
        """What the decoded message ``envelope`` brings to deliver, as ``(offset, message)``, or None."""
        if "o" in envelope and "d" in envelope:
            offset = envelope["o"]
            key = offset_key(offset)
            if self.offset is not None and key <= self._offset_key:
                if is_counter(envelope["d"]) or (
                        self._state_until is not None and key <= offset_key(self._state_until)):
                    self.replayed += 1
                else:
                    self.duplicates += 1
                return None
            self.offset, self._offset_key = offset, key
            return offset, envelope["d"]
        if "a" in envelope:
            self.announcements.append(envelope["a"])
        elif "c" in envelope:
            self.starts += 1
            if self.on_start is not None:
                self.on_start()
            if envelope["c"] == GAP:
                self.gaps[envelope["reason"]] += 1
            if envelope["c"] == RESUMED:
                self._state_until = None
            else:
                if envelope["epoch"] != self.epoch:
                    self.offset = self._offset_key = None
                self.joined = self._state_until = envelope["o"]
            self.epoch = envelope["epoch"]
        return None

    def count_frame(self, buffer, start, end):
        """The messages delivered from the SockJS array frame ``buffer[start:end]``, each to :meth:`delivered`."""
        count = 0
        for envelope in _decode(buffer[start + 1:end].decode()):
            delivery = self.receive(envelope)
            if delivery is not None:
                count += 1
                self.delivered(*delivery)
        return count

    def delivered(self, offset, message):
        """What a subclass does with each message delivered (nothing, here)."""
