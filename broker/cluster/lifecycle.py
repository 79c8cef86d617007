"""The backplane's read loop as a table: (state, event) -> (state, action), without I/O.

Rules kept here (:mod:`broker.cluster.backplane` does the I/O: it asks :class:`Lifecycle`
what to do, does it, and tells it how that ended):

* The loop is ``connecting`` until the stream's tail was loaded once, then ``up``,
  reading after the last id delivered. A failure of Redis makes it ``down``:
  after a pause it asks Redis the room's epoch, and reads on if it is the one
  the hub has, or loads the tail again if it changed (Redis lost its data).
* The stream lost the last id delivered (a read finds it, :mod:`broker.cluster.state`
  judges why): ``trimmed``, the tail is loaded again and the clients told
  ``expired`` unless the epoch changed meanwhile; ``failover``, the room is given
  a new epoch, then the tail is loaded. Each is a state of its own,
  ``reloading``, kept through failures until a load succeeds, so the loss is
  told once and never forgotten; the events that name them
  (:attr:`LifecycleEvent.TRIMMED`, :attr:`LifecycleEvent.FAILOVER`) are the
  reasons the bookkeeping counts.
* Another broker's epoch, seen by the audience report (another task, at any
  moment), asks for a reload too, unless one is pending or no tail was loaded
  yet (the tail it loads has the epoch). It changes the state only: the read
  loop's action in flight ends first (a read delivers what it read, a resume
  that found the epoch unchanged reads once), and the next action is the new
  state's.
* A pause ends, or the loop starts again after a defect of its own, with
  :attr:`LifecycleEvent.READY`: the state says what to do, so whatever was
  pending is done then.
* Once stopped, the loop acts no more; a report in flight may still see an epoch.
* A (state, event) pair the table lacks is a defect of the I/O layer, not a
  state of Redis: it raises :class:`LifecycleError` (as h11 raises
  ``LocalProtocolError``) and leaves the state as it was.

Whether the backplane takes messages (``connecting``, ``up``, ``down`` in ``/stats``) is
the bookkeeping's (:class:`broker.cluster.state.BackplaneState`): it follows each call to
Redis, so a reload is ``up`` there until one of its calls fails.
"""

import enum


class LifecycleState(enum.Enum):
    """Where the read loop is, and so what it has to do next."""

    CONNECTING = "connecting"  # no tail loaded yet
    UP = "up"  # reading after the last id delivered
    DOWN = "down"  # Redis failed: ask its epoch before reading on
    RELOADING_TRIMMED = "reloading (trimmed)"
    RELOADING_FAILOVER = "reloading (failover)"
    RELOADING_EPOCH = "reloading (another broker's epoch)"
    STOPPED = "stopped"


class LifecycleEvent(enum.Enum):
    """How a step of the read loop ended, or what the audience report saw."""

    READY = "ready"  # the loop starts, or its pause is over
    TAIL_LOADED = "tail loaded"
    DELIVERED = "delivered"  # a read lost nothing; what it returned went to the hub
    TRIMMED = "trimmed"  # a read found entries after the last id delivered trimmed unread
    FAILOVER = "failover"  # a read found the stream never held the last id delivered
    SAME_EPOCH = "same epoch"  # a resume found the epoch the hub has
    EPOCH_CHANGED = "epoch changed"  # a resume found another: Redis lost its data
    EPOCH_SEEN = "another broker's epoch seen"  # by the audience report
    FAILED = "failed"  # a call to Redis failed
    STOPPED = "stopped"


class LifecycleAction(enum.Enum):
    """What the I/O layer does next."""

    LOAD_TAIL = "load the tail"
    LOAD_TAIL_TELL_EXPIRED = "load the tail, tell expired unless the epoch changed"
    NEW_EPOCH = "give the room a new epoch, load the tail"
    RESUME = "ask Redis the room's epoch"
    READ = "read after the last id delivered"
    PAUSE = "pause (the reconnect backoff)"
    NOTHING = "nothing: the action in flight ends first"
    STOP = "stop"


S, E, A = LifecycleState, LifecycleEvent, LifecycleAction

TRANSITIONS = {
    # No tail loaded yet: load it (start() tries once, before the loop starts).
    (S.CONNECTING, E.READY): (S.CONNECTING, A.LOAD_TAIL),
    (S.CONNECTING, E.TAIL_LOADED): (S.UP, A.READ),
    (S.CONNECTING, E.FAILED): (S.CONNECTING, A.PAUSE),
    (S.CONNECTING, E.EPOCH_SEEN): (S.CONNECTING, A.NOTHING),  # the tail it loads has the epoch
    (S.CONNECTING, E.STOPPED): (S.STOPPED, A.STOP),
    # Reading.
    (S.UP, E.READY): (S.UP, A.READ),  # after a defect of the loop's own
    (S.UP, E.DELIVERED): (S.UP, A.READ),
    (S.UP, E.TRIMMED): (S.RELOADING_TRIMMED, A.LOAD_TAIL_TELL_EXPIRED),
    (S.UP, E.FAILOVER): (S.RELOADING_FAILOVER, A.NEW_EPOCH),
    (S.UP, E.EPOCH_SEEN): (S.RELOADING_EPOCH, A.NOTHING),
    (S.UP, E.FAILED): (S.DOWN, A.PAUSE),
    (S.UP, E.STOPPED): (S.STOPPED, A.STOP),
    # Redis failed: after a pause, read on in the same epoch, or load the tail of another.
    (S.DOWN, E.READY): (S.DOWN, A.RESUME),
    (S.DOWN, E.SAME_EPOCH): (S.UP, A.READ),
    (S.DOWN, E.EPOCH_CHANGED): (S.DOWN, A.LOAD_TAIL),  # a failure meanwhile resumes again
    (S.DOWN, E.TAIL_LOADED): (S.UP, A.READ),
    (S.DOWN, E.FAILED): (S.DOWN, A.PAUSE),
    (S.DOWN, E.EPOCH_SEEN): (S.RELOADING_EPOCH, A.NOTHING),
    (S.DOWN, E.STOPPED): (S.STOPPED, A.STOP),
    # Entries after the last id delivered were trimmed before they were read.
    (S.RELOADING_TRIMMED, E.READY): (S.RELOADING_TRIMMED, A.LOAD_TAIL_TELL_EXPIRED),
    (S.RELOADING_TRIMMED, E.TAIL_LOADED): (S.UP, A.READ),
    (S.RELOADING_TRIMMED, E.FAILED): (S.RELOADING_TRIMMED, A.PAUSE),
    (S.RELOADING_TRIMMED, E.EPOCH_SEEN): (S.RELOADING_TRIMMED, A.NOTHING),
    (S.RELOADING_TRIMMED, E.STOPPED): (S.STOPPED, A.STOP),
    # The stream never held the last id delivered: its history is lost.
    (S.RELOADING_FAILOVER, E.READY): (S.RELOADING_FAILOVER, A.NEW_EPOCH),
    (S.RELOADING_FAILOVER, E.TAIL_LOADED): (S.UP, A.READ),
    (S.RELOADING_FAILOVER, E.FAILED): (S.RELOADING_FAILOVER, A.PAUSE),
    (S.RELOADING_FAILOVER, E.EPOCH_SEEN): (S.RELOADING_FAILOVER, A.NOTHING),
    (S.RELOADING_FAILOVER, E.STOPPED): (S.STOPPED, A.STOP),
    # Another broker's epoch: the step in flight (a read, a resume, a load) ends first.
    (S.RELOADING_EPOCH, E.READY): (S.RELOADING_EPOCH, A.LOAD_TAIL),
    (S.RELOADING_EPOCH, E.DELIVERED): (S.RELOADING_EPOCH, A.LOAD_TAIL),
    (S.RELOADING_EPOCH, E.TRIMMED): (S.RELOADING_TRIMMED, A.LOAD_TAIL_TELL_EXPIRED),
    (S.RELOADING_EPOCH, E.FAILOVER): (S.RELOADING_FAILOVER, A.NEW_EPOCH),
    (S.RELOADING_EPOCH, E.SAME_EPOCH): (S.RELOADING_EPOCH, A.READ),
    (S.RELOADING_EPOCH, E.EPOCH_CHANGED): (S.RELOADING_EPOCH, A.LOAD_TAIL),
    (S.RELOADING_EPOCH, E.TAIL_LOADED): (S.UP, A.READ),
    (S.RELOADING_EPOCH, E.FAILED): (S.RELOADING_EPOCH, A.PAUSE),
    (S.RELOADING_EPOCH, E.EPOCH_SEEN): (S.RELOADING_EPOCH, A.NOTHING),
    (S.RELOADING_EPOCH, E.STOPPED): (S.STOPPED, A.STOP),
    # Stopped: a report in flight may still see an epoch.
    (S.STOPPED, E.EPOCH_SEEN): (S.STOPPED, A.NOTHING),
}

del S, E, A


class LifecycleError(Exception):
    """An event the read loop's state cannot take: a defect of the I/O layer."""


class Lifecycle:
    """The read loop's state, moved by :data:`TRANSITIONS`."""

    def __init__(self):
        self.state = LifecycleState.CONNECTING

    def handle(self, event):
        """Take ``event`` (a :class:`LifecycleEvent`): returns the :class:`LifecycleAction`
        to do next, or raises :class:`LifecycleError`, the state unchanged."""
        try:
            self.state, action = TRANSITIONS[self.state, event]
        except KeyError:
            raise LifecycleError("the backplane's read loop, %s, cannot take: %s"
                                 % (self.state.value, event.value)) from None
        return action
