"""The broker's own announcement (``{"audience": N}``): a message of the broker's, not of the room.

Rules this module keeps:

* An announcement is never relayed, replayed, kept in the history or counted
  as a message: it rides at the end of the next unkeyed batch the room sends
  (:meth:`Announcement.riding`), and goes alone only when the room finds it
  still waiting (a quiet room, :meth:`broker.core.hub.Hub.send_announcement`).
* A newer announcement replaces one not yet sent.
* A new subscriber gets the latest one after its replay
  (:meth:`Announcement.for_newcomer`), so it need not wait for the next change.
"""


class Announcement:
    """The latest announcement's JSON text (``latest``), and the one still to be sent (``waiting``)."""

    __slots__ = ("waiting", "latest")

    def __init__(self):
        self.waiting = None
        self.latest = None

    def announce(self, encoded):
        self.waiting = self.latest = encoded

    def riding(self, batch):
        """``batch`` (a :class:`broker.protocol.batch.Batch`) with the waiting announcement at
        its end, which then waits no more; a batch of a conflating key goes as it is."""
        if self.waiting is None or batch.key is not None:
            return batch
        batch, self.waiting = batch.with_announcement(self.waiting), None
        return batch

    def for_newcomer(self, batch):
        """``batch``, a new subscriber's first, with the latest announcement at its end."""
        return batch if self.latest is None else batch.with_announcement(self.latest)
