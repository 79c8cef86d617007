"""The event loop's own tick, timed: how late the loop runs, for ``/healthz`` and ``/stats``.

Rules this module keeps:

* One tick every :data:`broker.core.liveness.TICK_S` on the running loop, each telling the
  :class:`broker.core.liveness.Liveness` how late it ran; nothing else is done in it.
* Started and stopped like the broker's timers (:func:`broker.app.run` holds it among them).
"""

import asyncio
import time

from broker.core.liveness import TICK_S


class LoopWatch:
    """Ticks every :data:`broker.core.liveness.TICK_S` on the running loop, telling
    ``liveness`` how late each tick ran; started and stopped like the broker's timers."""

    def __init__(self, liveness):
        self.liveness = liveness
        self._handle = None

    def start(self):
        loop = asyncio.get_running_loop()
        self._handle = loop.call_at(loop.time() + TICK_S, self._tick, loop, loop.time() + TICK_S)

    def _tick(self, loop, due):
        now = loop.time()
        self.liveness.ticked(now - due, time.monotonic())
        self._handle = loop.call_at(now + TICK_S, self._tick, loop, now + TICK_S)

    def stop(self):
        self._handle.cancel()
