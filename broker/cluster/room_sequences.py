"""Where a named room's delivery stands at this broker, without I/O: deliver, recover, or a gap.

Rules kept here (:mod:`broker.cluster.room_feeds` does the I/O; the stream ids are Redis's,
compared as :func:`broker.cluster.state.stream_id` reads them):

* ``last`` is the id of the newest entry of the room's stream delivered to its hub (or the
  tail loaded); ids delivered only grow, so an entry is delivered at most once.
* A message on the room's channel says ``prev``, the stream's newest id before its entry, and
  ``new``, its entry's (:mod:`broker.cluster.named_rooms`). :meth:`RoomSequence.judge`:
  ``new`` not after ``last`` is a duplicate or older (the tail loaded held it): ``IGNORE``;
  ``prev`` is ``last``: nothing was missed, ``DELIVER`` it; any other ``prev`` means entries
  between ``last`` and ``new`` did not come (the channel lost them: a reconnect, a full output
  buffer) or the stream is not the one ``last`` was read from: ``RECOVER``, read the stream
  after ``last`` through ``new``.
* A read of the stream (a recovery, or every subscribed room's after the pub/sub connection
  came back) asks, with the entries after ``last``, for the newest entry at or before ``last``.
  :meth:`RoomSequence.judge_read`: it is ``last``: the stream still holds it, ``HELD``, deliver
  what follows. ``last`` is the stream's :data:`BEGINNING` (the room was loaded before its first
  entry, and nothing was delivered since): ``HELD`` while the stream holds every entry it was
  ever given (Redis's ``entries-added`` is its length), else ``TRIMMED``. An older
  one: the stream never held ``last`` (a trim takes the oldest, so it would not keep older
  ones): ``FAILOVER`` (a new primary, or a Redis restarted from its disk). None: ``last`` was
  trimmed, or the room's keys expired (its stream with it): ``TRIMMED``. For either loss the
  room's clients may have missed messages: the I/O loads the tail again and tells them a gap
  (a new epoch for a failover, as the default room does, :mod:`broker.cluster.lifecycle`).
  Whether entries after ``last`` were trimmed with it cannot be told without the stream's
  position, which a named room does not keep: a gap is told for every trim of ``last``.
"""

import enum

from broker.cluster.state import BEGINNING, stream_id


class ChannelStep(enum.Enum):
    """What to do with a message on a room's channel."""

    DELIVER = "deliver"
    RECOVER = "read the stream after the last id delivered, through the message's"
    IGNORE = "ignore: a duplicate or older"


class StreamRead(enum.Enum):
    """What a read of a room's stream after its last id delivered found."""

    HELD = "held: deliver what follows"
    TRIMMED = "trimmed"
    FAILOVER = "failover"


class RoomSequence:
    """One named room's ``last`` id delivered (see the module's rules)."""

    __slots__ = ("last",)

    def __init__(self, last=BEGINNING):
        self.last = last

    def judge(self, prev, new):
        """The :class:`ChannelStep` for a channel's message of ``prev`` and ``new``."""
        if stream_id(new) <= stream_id(self.last):
            return ChannelStep.IGNORE
        if prev == self.last:
            return ChannelStep.DELIVER
        return ChannelStep.RECOVER

    def judge_read(self, at_or_before, whole):
        """The :class:`StreamRead` for a read that found ``at_or_before`` the newest entry's id at or
        before ``last`` (None: none), the stream ``whole`` if none of its entries was trimmed."""
        if self.last == BEGINNING:
            return StreamRead.HELD if whole else StreamRead.TRIMMED
        if at_or_before == self.last:
            return StreamRead.HELD
        if at_or_before is not None:
            return StreamRead.FAILOVER
        return StreamRead.TRIMMED

    def delivered(self, new):
        """Entries through ``new`` went to the hub."""
        self.last = new
