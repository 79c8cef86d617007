"""The load client's own lag: a loop held busy shows it."""

import asyncio
import time

from loadtest.client.loop_lag import LAG_SAMPLE_S, LagMonitor


def test_a_loop_held_busy_shows_at_least_that_lag():
    async def hold_the_loop():
        monitor = LagMonitor()
        await asyncio.sleep(2 * LAG_SAMPLE_S)
        monitor.reset()
        time.sleep(0.05)  # the loop cannot run the monitor's timer meanwhile
        await asyncio.sleep(2 * LAG_SAMPLE_S)
        monitor.stop()
        return monitor.summary_ms()

    lag = asyncio.run(hold_the_loop())
    assert lag["max"] >= 50 - 1000 * LAG_SAMPLE_S
    assert lag["mean"] > 0
