"""The room's history: its last messages with their offsets, for replay and resume.

Rules this module keeps:

* An offset is the text the room gives a message: a count for a broker alone
  (``"41"``), the Redis stream id in a cluster (``"1700000000000-3"``). Offsets
  grow with every message; they compare as ``(number, sequence)`` pairs
  (:func:`broker.protocol.positions.offset_key`), never as text.
* At most ``count`` messages are kept, and with ``seconds`` none older than
  that (checked as messages are added and on :meth:`History.trim`). A
  message that leaves is gone for good: ``horizon`` is the key of the newest
  message gone, or of the position the history started from (``start``).
* A message with a conflating key (:mod:`broker.core.conflation`) replaces
  the one kept under its key: the history holds the latest message of each
  key and the unkeyed ones. A replaced message does not move the horizon:
  its key's value is still there, newer. The replay tail holds the latest
  message of every key kept, whatever its age, besides the last messages.
* ``bytes`` is the length of the JSON texts kept, together (a message's size as
  ``max_message_size`` counts it): a sum kept as messages are added, replaced,
  forgotten and restarted, never counted again. :meth:`History.shrink` forgets
  the oldest messages until it is at most a number of bytes, the horizon moving
  as with ``count``: a resume past what it forgot is a gap.
* Adding a message costs the same whatever the history holds: the unkeyed
  ones wait in one queue, the latest of each key in another, ordered by
  offset (an update leaves its key's place for the end), and what leaves is
  the older of the two heads.
* Replay and resume read the two queues from their newest ends, merged in
  offset order, one message at a time (:meth:`History.tail`,
  :meth:`History.after`): each message given costs O(1), so a start that
  takes the newest k messages (a first batch is bounded) costs O(k), whatever
  the history's length and the number of keys.
* Everything after an offset X is kept exactly when ``horizon <= X``: a
  resume from X is then complete (:meth:`History.after`). A key past the
  newest offset is not judged here: the room decides (a broker behind its
  cluster catches up).
* Nothing here does I/O or reads a clock: the caller gives the time.
"""

import collections

from broker.protocol.positions import offset_key

_KEY = 0
_OFFSET = 1
_ENCODED = 2
_ADDED = 3


class History:
    """The last ``count`` messages (and none older than ``seconds``, unless 0)."""

    def __init__(self, count, seconds=0.0):
        self.count = count
        self.seconds = seconds
        self._kept = collections.deque()
        self._latest = collections.OrderedDict()
        self.start = (0, 0)
        self.horizon = (0, 0)
        self.newest = (0, 0)
        self.newest_offset = "0"
        self.forgotten = 0
        self.bytes = 0

    def __len__(self):
        return len(self._kept) + len(self._latest)

    def restart(self, start_offset="0"):
        """Forget everything: the room's history starts again after ``start_offset``."""
        self.forgotten += len(self)
        self._kept.clear()
        self._latest.clear()
        self.bytes = 0
        self.start = self.horizon = self.newest = offset_key(start_offset)
        self.newest_offset = str(start_offset)

    def add(self, offsets, encoded, now, keys=None):
        """Keep the messages ``encoded`` (JSON texts) at ``offsets``, added at
        ``now``; ``keys``: each one's conflating key or None (None: no keys)."""
        if not encoded:
            return
        kept, latest = self._kept, self._latest
        if self.count:
            self.bytes += sum(map(len, encoded))
            if keys is None:
                for offset, text in zip(offsets, encoded):
                    kept.append((offset_key(offset), offset, text, now))
            else:
                for offset, text, key in zip(offsets, encoded, keys):
                    entry = (offset_key(offset), offset, text, now)
                    if key is None:
                        kept.append(entry)
                    else:
                        replaced = latest.pop(key, None)
                        if replaced is not None:
                            self.bytes -= len(replaced[_ENCODED])
                        latest[key] = entry
        self.newest = offset_key(offsets[-1])
        self.newest_offset = str(offsets[-1])
        if not self.count:
            self.horizon = self.newest
            return
        while len(kept) + len(latest) > self.count:
            self._forget()
        self.trim(now)

    def _oldest_is_keyed(self):
        """Whether the oldest message kept is the latest of a key (some key is kept)."""
        kept = self._kept
        return not kept or next(iter(self._latest.values()))[_KEY] < kept[0][_KEY]

    def _oldest(self):
        """The oldest message kept, or None."""
        if self._latest and self._oldest_is_keyed():
            return next(iter(self._latest.values()))
        return self._kept[0] if self._kept else None

    def _forget(self):
        if self._latest and self._oldest_is_keyed():
            entry = self._latest.popitem(last=False)[1]
        else:
            entry = self._kept.popleft()
        self.horizon = entry[_KEY]
        self.forgotten += 1
        self.bytes -= len(entry[_ENCODED])

    def shrink(self, most):
        """Forget the oldest messages until the history holds at most ``most`` bytes; how
        many it forgot."""
        forgotten = self.forgotten
        while self.bytes > most:
            self._forget()
        return self.forgotten - forgotten

    def trim(self, now):
        """Forget what is older than ``seconds`` at ``now``."""
        if not self.seconds:
            return
        oldest = self._oldest()
        while oldest is not None and now - oldest[_ADDED] > self.seconds:
            self._forget()
            oldest = self._oldest()

    def tail(self, n):
        """The last ``n`` messages kept, and the latest of every key: ``(offset, encoded)``
        pairs, newest first, one at a time (see the module's rules)."""
        if n <= 0:
            return iter(())
        return self._newest_first(None, n)

    def after(self, key):
        """Every message after ``key``: ``(offset, encoded)`` pairs, newest first, one at a
        time; None when some of them are gone (``key`` older than ``horizon``)."""
        if key < self.horizon:
            return None
        return self._newest_first(key, None)

    def _newest_first(self, after, last):
        """The messages kept newer than the key ``after`` (None: all), newest first: with
        ``last``, only the latest of each key once ``last`` messages are given."""
        unkeyed, keyed = reversed(self._kept), reversed(self._latest.values())
        next_unkeyed, next_keyed = next(unkeyed, None), next(keyed, None)
        while next_unkeyed is not None or next_keyed is not None:
            if next_keyed is None or next_unkeyed is not None and next_keyed[_KEY] < next_unkeyed[_KEY]:
                entry, next_unkeyed = next_unkeyed, next(unkeyed, None)
            else:
                entry, next_keyed = next_keyed, next(keyed, None)
            if after is not None and entry[_KEY] <= after:
                return
            yield entry[_OFFSET], entry[_ENCODED]
            if last is not None:
                last -= 1
                if not last:
                    next_unkeyed = None  # the unkeyed ones older than the last are not wanted
