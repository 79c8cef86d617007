"""One short step of ``python -m loadtest`` (5 clients at 20 msgs/s for 1 s) and what every such step must show.

The tests that use it check delivery, not speed: a step on a busy machine may
end its level client-bound (the client's loop starved, so its round trips
measure the machine), which the level's end then says. Lost, dropped or
overloaded fails wherever it runs.
"""

import subprocess
import sys

from checkout import ROOT

RUN_TIMEOUT_S = 60
CLIENTS, RATE = 5, 20


def run(url, out, *options):
    """The finished ``python -m loadtest`` process for one step, its records in ``out``."""
    return subprocess.run(
        [sys.executable, "-m", "loadtest", "--url", url, "--clients", str(CLIENTS), "--rate", str(RATE),
         "--step-seconds", "1", "--pause", "0.1", "--out", str(out), *options],
        cwd=ROOT, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)


def check_every_delivery(records):
    """The step's record, once every message reached every client and the level ended as its step allows."""
    (step,) = [r for r in records if r["type"] == "step"]
    assert (step["sent"], step["received"], step["lost"], step["dropped"], step["overloaded"]) == (
        RATE, RATE * CLIENTS, 0, 0, False), step
    assert 0 < step["rtt_ms"]["p50"] <= step["rtt_ms"]["max"]
    (end,) = [r["end"] for r in records if r["type"] == "level"]
    assert end == "sweep done" or (step["client_bound"] and end.startswith("client-bound: ")), end
    return step
