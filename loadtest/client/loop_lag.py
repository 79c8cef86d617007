"""How late the load client's own loop runs: the delay it adds to every round trip it times.

A timer asks to wake up after ``LAG_SAMPLE_S``; how much later it wakes is the lag.
"""

import asyncio

LAG_SAMPLE_S = 0.01


class LagMonitor:
    """Samples the lag of the running loop from construction until :meth:`stop`."""

    def __init__(self):
        self.reset()
        self._task = asyncio.ensure_future(self._run())

    def reset(self):
        self.total = 0.0
        self.count = 0
        self.max = 0.0

    async def _run(self):
        loop = asyncio.get_event_loop()
        while True:
            before = loop.time()
            await asyncio.sleep(LAG_SAMPLE_S)
            lag = loop.time() - before - LAG_SAMPLE_S
            self.total += lag
            self.count += 1
            if lag > self.max:
                self.max = lag

    def summary_ms(self):
        """``{"mean", "max"}`` in milliseconds since the last :meth:`reset`."""
        mean = self.total / self.count if self.count else 0.0
        return {"mean": round(mean * 1000, 3), "max": round(self.max * 1000, 3)}

    def stop(self):
        self._task.cancel()
