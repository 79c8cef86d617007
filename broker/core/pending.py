"""What a room alone was given since its last flush, and the offsets it gives it.

Rules this module keeps:

* Messages wait in publish order, each as its JSON text and the bytes the raw
  websocket sends, until the room's next flush takes them all, as one
  :class:`broker.protocol.batch.Batch` (:meth:`Pending.take`).
* A room alone numbers its messages: the first is offset 1, and a flush's
  batch carries the next ones in order. In a cluster the relay numbers them,
  and nothing waits here.
* Conflating keys cost nothing until one is given: the keys of a flush are
  kept only once one of its messages has one.
* The time of the first message of a flush is kept (``oldest``): the room
  counts every message of the batch at that age, two clock reads a flush.
"""

from broker.protocol.batch import Batch


class Pending:
    __slots__ = ("offset", "oldest", "_encoded", "_raw", "_keys")

    def __init__(self):
        self.offset = 0
        self.oldest = None
        self._encoded = []
        self._raw = []
        self._keys = None

    def add(self, encoded, raw, key, clock):
        """Keep one message (its JSON text, its raw bytes, its conflating key or None); whether
        it is the first since the last flush (the flush is to be asked for), whose time
        ``clock()`` then gives."""
        waiting = self._encoded
        if key is not None and self._keys is None:
            self._keys = [None] * len(waiting)
        if self._keys is not None:
            self._keys.append(key)
        waiting.append(encoded)
        self._raw.append(raw)
        if len(waiting) == 1:
            self.oldest = clock()
            return True
        return False

    def next_offset(self):
        """The offset of the message kept last (a text)."""
        return str(self.offset + len(self._encoded))

    def take(self):
        """Everything kept, as ``(batch, keys)`` (keys None when none has one), or None."""
        encoded = self._encoded
        if not encoded:
            return None
        first = self.offset + 1
        self.offset += len(encoded)
        batch = Batch(encoded, self._raw, range(first, self.offset + 1))
        keys = self._keys
        self._encoded, self._raw, self._keys = [], [], None
        return batch, keys
