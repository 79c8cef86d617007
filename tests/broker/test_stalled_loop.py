"""A broker is healthy while a message would get through it: one whose event loop was held up
for seconds (SIGSTOP here, as a paused machine or a blocked loop would) answers ``/healthz``
503 once it runs again, for as long as the documented window, then 200; the loop's lag is in
``/stats``. A cluster's round trip is tested in tests/cluster/test_backplane_liveness.py."""

import signal
import time

from broker.core import liveness
from sockjs_clients import wait_until


def health(broker):
    status, answer = broker.request("GET", "/healthz")
    return status, answer.get("reason")


def test_a_broker_stopped_for_seconds_is_unhealthy_for_its_lag_once_it_runs(start_broker):
    broker = start_broker()
    wait_until(lambda: health(broker)[0] == 200, timeout=10)
    broker.server.process.send_signal(signal.SIGSTOP)
    time.sleep(liveness.LAG_BOUND_S + 1)  # the stop itself, not an assertion
    broker.server.process.send_signal(signal.SIGCONT)
    status, reason = health(broker)
    assert status == 503 and "event loop" in reason, reason
    stats = broker.stats()["liveness"]
    assert stats["round_trip_age_s"] is None
    wait_until(lambda: health(broker)[0] == 200, timeout=liveness.LAG_WINDOW_S + 5)
