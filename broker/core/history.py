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
* Everything after an offset X is kept exactly when ``horizon <= X``: a
  resume from X is then complete (:meth:`History.after`). A key past the
  newest offset is not judged here: the room decides (a broker behind its
  cluster catches up).
* Nothing here does I/O or reads a clock: the caller gives the time.
"""

import collections
import itertools

from broker.protocol.positions import offset_key

_KEY = 0
_OFFSET = 1
_ENCODED = 2
_ADDED = 3
_CONFLATING = 4


class History:
    """The last ``count`` messages (and none older than ``seconds``, unless 0)."""

    def __init__(self, count, seconds=0.0):
        self.count = count
        self.seconds = seconds
        self._kept = collections.deque()
        self._latest = {}
        self.start = (0, 0)
        self.horizon = (0, 0)
        self.newest = (0, 0)
        self.newest_offset = "0"
        self.forgotten = 0

    def __len__(self):
        return len(self._kept)

    def restart(self, start_offset="0"):
        """Forget everything: the room's history starts again after ``start_offset``."""
        self.forgotten += len(self._kept)
        self._kept.clear()
        self._latest.clear()
        self.start = self.horizon = self.newest = offset_key(start_offset)
        self.newest_offset = str(start_offset)

    def add(self, offsets, encoded, now, keys=None):
        """Keep the messages ``encoded`` (JSON texts) at ``offsets``, added at
        ``now``; ``keys``: each one's conflating key or None (None: no keys)."""
        if not encoded:
            return
        kept = self._kept
        if self.count:
            if keys is None:
                for offset, text in zip(offsets, encoded):
                    kept.append((offset_key(offset), offset, text, now, None))
            else:
                for offset, text, key in zip(offsets, encoded, keys):
                    self._keep(kept, (offset_key(offset), offset, text, now, key))
        self.newest = offset_key(offsets[-1])
        self.newest_offset = str(offsets[-1])
        if not self.count:
            self.horizon = self.newest
            return
        while len(kept) > self.count:
            self._forget()
        self.trim(now)

    def _keep(self, kept, entry):
        key = entry[_CONFLATING]
        if key is not None:
            replaced = self._latest.get(key)
            if replaced is not None:
                kept.remove(replaced)
            self._latest[key] = entry
        kept.append(entry)

    def _forget(self):
        entry = self._kept.popleft()
        self.horizon = entry[_KEY]
        self.forgotten += 1
        key = entry[_CONFLATING]
        if key is not None and self._latest.get(key) is entry:
            del self._latest[key]

    def trim(self, now):
        """Forget what is older than ``seconds`` at ``now``."""
        if not self.seconds:
            return
        kept = self._kept
        while kept and now - kept[0][_ADDED] > self.seconds:
            self._forget()

    def tail(self, n):
        """The last ``n`` messages kept, and the latest of every key: ``(offsets, encoded)``."""
        if n <= 0 or not self._kept:
            return [], []
        entries = list(itertools.islice(reversed(self._kept), n))[::-1]
        if self._latest:
            entries = sorted(set(entries).union(self._latest.values()))
        return [e[_OFFSET] for e in entries], [e[_ENCODED] for e in entries]

    def after(self, key):
        """Every message after ``key``: ``(offsets, encoded)``, or None when some
        of them are gone (``key`` older than ``horizon``)."""
        if key < self.horizon:
            return None
        entries = []
        for entry in reversed(self._kept):
            if entry[_KEY] <= key:
                break
            entries.append(entry)
        entries.reverse()
        return [e[_OFFSET] for e in entries], [e[_ENCODED] for e in entries]
