"""A client's backlog: what it has not taken yet, bounded, one item per conflating key.

Every queue of unsent items a client has is one :class:`Backlog`: a socket's
bytes the kernel would not take yet (:mod:`broker.transports.owned_socket`),
a session's messages waiting for its next request
(:mod:`broker.transports.session`). Rules this module keeps:

* A backlog holds chunks (bytes, a memoryview of them, or a message's JSON
  text) in the order queued, and their ``size``, the sum of their ``len``: a
  JSON text is ASCII (:mod:`broker.protocol.frames`), so either is bytes.
* :meth:`Backlog.offer` is the bounded way in, for the room's batches: a
  backlog over the bound for the chunk's key
  (:func:`broker.core.conflation.bound`) takes nothing and answers False, and
  the room drops that client as a slow consumer; a chunk of a conflating key
  replaces the one still queued under it
  (:func:`broker.core.conflation.replace_queued`), and a text of a key is
  queued as an object of its own, which the backlog finds again by identity
  (CPython shares one-character strings). :meth:`Backlog.append` queues
  whatever the size: a session's own frames, an HTTP answer.
* Chunks leave from the head: as a socket writes them (:meth:`Backlog.written`,
  a chunk partly written leaving a memoryview of its rest, which no key
  remembers), or all at once (:meth:`Backlog.take_all`).
* No I/O, no clock: the socket and the session write, and time, what it holds.
"""

from broker.core.conflation import bound, replace_queued


class Backlog:
    """Chunks not yet taken, in order (``chunks``, a list), and their ``size``."""

    __slots__ = ("chunks", "size", "_latest")

    def __init__(self):
        self.chunks = []
        self.size = 0
        # The chunk queued last under each conflating key, once one was.
        self._latest = None

    def __len__(self):
        return len(self.chunks)

    def offer(self, chunk, key, max_buffer):
        """Queue ``chunk`` of the conflating ``key`` (None: none), replacing the
        one queued under ``key``; False, queueing nothing, when the backlog is
        over the bound of ``key`` for a client of ``max_buffer``."""
        if self.size > bound(max_buffer, key):
            return False
        if key is None:
            self.chunks.append(chunk)
            self.size += len(chunk)
            return True
        if self._latest is None:
            self._latest = {}
        if type(chunk) is str:
            chunk = _KeyedText(chunk)
        replaced = replace_queued(self.chunks, self._latest, key, chunk)
        self.size += len(chunk) - (len(replaced) if replaced is not None else 0)
        return True

    def append(self, chunk):
        """Queue ``chunk``, whatever the size of the backlog."""
        self.chunks.append(chunk)
        self.size += len(chunk)

    def written(self, count):
        """The first ``count`` bytes were written: they leave the backlog."""
        self.size -= count
        chunks = self.chunks
        done = 0
        for chunk in chunks:
            size = len(chunk)
            if count < size:
                if count:
                    chunks[done] = memoryview(chunk)[count:]
                break
            count -= size
            done += 1
        del chunks[:done]

    def take_all(self):
        """Every chunk, in order, leaving the backlog empty."""
        chunks = self.chunks
        self.chunks = []
        self.size = 0
        self._latest = None
        return chunks


class _KeyedText(str):
    """A keyed text in a backlog: an object of its own (see the module's rules)."""

    __slots__ = ()
