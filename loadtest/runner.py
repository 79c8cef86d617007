"""Running one measurement from a command: Ctrl-C cancels it cleanly, and how it ended is a value.

Rules:

- The coroutine runs on a fresh event loop, closed whatever happens. SIGINT
  cancels it: the measurement's ``finally`` blocks run and no traceback shows.
- A :class:`loadtest.errors.LoadTestError` ends the measurement and comes back
  in the :class:`Outcome`; any other exception is a bug and propagates.
"""

import asyncio
import dataclasses
import signal
from typing import Any, Optional

from loadtest.errors import LoadTestError


@dataclasses.dataclass(frozen=True)
class Outcome:
    """How a measurement ended: its ``value``, or ``interrupted``, or the ``error`` that ended it."""

    value: Any = None
    interrupted: bool = False
    error: Optional[LoadTestError] = None

    @property
    def done(self):
        return not self.interrupted and self.error is None


def run_interruptible(coroutine):
    """Run ``coroutine`` until it returns, fails with a LoadTestError or Ctrl-C; its :class:`Outcome`."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    task = loop.create_task(coroutine)
    loop.add_signal_handler(signal.SIGINT, task.cancel)
    try:
        return Outcome(value=loop.run_until_complete(task))
    except asyncio.CancelledError:
        return Outcome(interrupted=True)
    except LoadTestError as error:
        return Outcome(error=error)
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
