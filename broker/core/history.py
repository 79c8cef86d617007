"""The room's history: its last messages with their offsets, for replay and resume.

Rules this module keeps:

* An offset is the text the room gives a message: a count for a broker alone
  (``"41"``), the Redis stream id in a cluster (``"1700000000000-3"``). Offsets
  grow with every message; they compare as ``(number, sequence)`` pairs
  (:func:`offset_key`), never as text.
* At most ``count`` messages are kept, and with ``seconds`` none older than
  that (checked as messages are added and on :meth:`History.trim`). A
  message that leaves is gone for good: ``horizon`` is the key of the newest
  message gone, or of the position the history started from (``start``).
* Everything after an offset X is kept exactly when ``horizon <= X``: a
  resume from X is then complete (:meth:`History.after`). A key past the
  newest offset is not judged here: the room decides (a broker behind its
  cluster catches up).
* Nothing here does I/O or reads a clock: the caller gives the time.
"""

import collections

_KEY = 0
_OFFSET = 1
_ENCODED = 2
_ADDED = 3


def offset_key(offset):
    """The comparable key of an offset (``"41"``, ``"1700000000000-3"``, or an int);
    ValueError for anything else."""
    if type(offset) is int:
        if offset < 0:
            raise ValueError("a negative offset")
        return offset, 0
    number, dash, sequence = offset.partition("-")
    if not number.isdigit() or (dash and not sequence.isdigit()) or len(offset) > 40:
        raise ValueError("not an offset: %r" % offset[:40])
    return int(number), int(sequence) if dash else 0


class History:
    """The last ``count`` messages (and none older than ``seconds``, unless 0)."""

    def __init__(self, count, seconds=0.0):
        self.count = count
        self.seconds = seconds
        self._kept = collections.deque()
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
        self.start = self.horizon = self.newest = offset_key(start_offset)
        self.newest_offset = str(start_offset)

    def add(self, offsets, encoded, now):
        """Keep the messages ``encoded`` (JSON texts) at ``offsets``, added at ``now``."""
        if not encoded:
            return
        kept = self._kept
        if self.count:
            for offset, text in zip(offsets, encoded):
                kept.append((offset_key(offset), offset, text, now))
        self.newest = offset_key(offsets[-1])
        self.newest_offset = str(offsets[-1])
        if not self.count:
            self.horizon = self.newest
            return
        while len(kept) > self.count:
            self.horizon = kept.popleft()[_KEY]
            self.forgotten += 1
        self.trim(now)

    def trim(self, now):
        """Forget what is older than ``seconds`` at ``now``."""
        if not self.seconds:
            return
        kept = self._kept
        while kept and now - kept[0][_ADDED] > self.seconds:
            self.horizon = kept.popleft()[_KEY]
            self.forgotten += 1

    def tail(self, n):
        """The last ``n`` messages kept: ``(offsets, encoded)``."""
        if n <= 0 or not self._kept:
            return [], []
        entries = list(self._kept)[-n:]
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
