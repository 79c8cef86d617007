"""A measurement's end is a value: what it returned, the error that ended it, or Ctrl-C."""

import asyncio
import os
import signal

import pytest

from loadtest.errors import LoadTestError
from loadtest.runner import run_interruptible


def test_a_measurement_that_returns_is_done_with_its_value():
    async def measure():
        return 42

    outcome = run_interruptible(measure())
    assert outcome.done and outcome.value == 42


def test_a_load_test_error_ends_it_and_comes_back():
    async def measure():
        raise LoadTestError("the server died")

    outcome = run_interruptible(measure())
    assert not outcome.done and str(outcome.error) == "the server died"


def test_ctrl_c_cancels_it_and_its_finally_blocks_run():
    cleaned = []

    async def measure():
        try:
            os.kill(os.getpid(), signal.SIGINT)
            await asyncio.sleep(30)
        finally:
            cleaned.append(True)

    outcome = run_interruptible(measure())
    assert outcome.interrupted and cleaned == [True]


def test_any_other_exception_is_a_bug_and_propagates():
    async def measure():
        raise KeyError("bug")

    with pytest.raises(KeyError):
        run_interruptible(measure())
