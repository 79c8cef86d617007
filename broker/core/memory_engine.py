"""The Engine of a broker alone: the room's order is this process's own.

Rules this module keeps (the seam is :mod:`broker.core.engines`):

* A message is queued in the room (:meth:`broker.core.hub.Hub.publish`), which
  numbers it: its offset is the one the room's next flush gives it
  (:meth:`broker.core.hub.Hub.pending_offset`), known at once.
* A counter's total is the room's (:meth:`broker.core.hub.Hub.count`), lost
  when the broker stops.
* Idempotency keys live in a :class:`broker.core.idempotency.Window` of this
  process: a key's first answer is kept once its request published, never
  for a request that raised. A key is its room's: a named room's keys are
  kept as ``(room's name, key)``, the default room's as they always were, all
  in one window, whose bound is the broker's (a room forgotten and made again
  still answers a retry of its keys once).
* Nothing here does I/O or waits: a publish is answered in the call; the
  caller gives the clock.
"""

import time

from broker.core.engines import PublishResult, first_answer


class MemoryEngine:
    """The :class:`broker.core.engines.Engine` of a broker alone, its idempotency keys in
    ``window`` (a :class:`broker.core.idempotency.Window`), read at ``clock()``."""

    def __init__(self, window, clock=time.monotonic):
        self.window = window
        self._clock = clock

    async def publish(self, room, request):
        """Publish ``request`` in ``room`` (see :mod:`broker.core.engines`)."""
        now = self._clock()
        once = request.once
        if once is not None:
            key = (room.name, once.key) if room.name else once.key
            kept = self.window.get(key, now)
            if kept is not None:
                return PublishResult.of(self.window.again(kept, once.fingerprint), replayed=True)
        counter = request.counter
        if counter is None:
            room.publish(request.message, request.conflating)
            value = None
        else:
            value = room.count(counter.name, counter.operation, counter.amount)[1]
        answer = first_answer(room, request, room.pending_offset(), value)
        if once is not None:
            self.window.put(key, answer, now)
        return PublishResult.of(answer)
