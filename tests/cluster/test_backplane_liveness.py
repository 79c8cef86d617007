"""A broker is healthy while a message would get through it, not while its process answers.

Its connection to Redis black-holed (no FIN, no RST: a partition) by a proxy of the test's own
(:mod:`tcp_proxy`): ``/healthz`` turns 503 within the documented bound, and back to 200 once
the path heals, every message acknowledged meanwhile delivered to its clients in order; the
same when the proxy closes every connection. A read loop that fails on a defect of its own
reads on, counted; a broker whose own writes stop coming back is "stalled", though Redis
answers (broker.core.liveness)."""

import asyncio
import time

import pytest
import redis

from broker.cluster import backplane as backplane_module
from broker.cluster.audience_report import AudienceReport
from broker.cluster.replies import REPLY_TIMEOUT_S, SILENCE_CHECK_S
from broker.core.liveness import ROUND_TRIP_BOUND_S, Liveness
from broker.core.hub import Hub
from loadtest.contenders import redis_server
from sockjs_clients import WebSocketClient, wait_until

from cluster_clients import publish, receive_until

# A silent Redis is found out within its reply timeout, and the health check says so at once.
UNHEALTHY_WITHIN_S = REPLY_TIMEOUT_S + SILENCE_CHECK_S + 1.0


def health(broker):
    """(HTTP status, the answer's status) of ``broker``'s ``/healthz``."""
    status, answer = broker.request("GET", "/healthz")
    return status, answer["status"]


def seconds_until_unhealthy(broker):
    started = time.monotonic()
    wait_until(lambda: health(broker)[0] == 503, timeout=UNHEALTHY_WITHIN_S + 5)
    return time.monotonic() - started


def statuses_until_healthy(broker, timeout):
    """Every status ``broker``'s ``/healthz`` answers until it is ``ok``."""
    seen = []
    wait_until(lambda: seen.append(health(broker)[1]) or seen[-1] == "ok", timeout=timeout)
    return set(seen)


@pytest.mark.parametrize("cut", ["hold", "refuse"], ids=["black-holed", "closed"])
def test_a_broker_whose_redis_path_is_cut_is_unhealthy_in_time_and_delivers_once_healed(proxied_pair, cut):
    publisher, cut_off, proxy = proxied_pair
    wait_until(lambda: health(cut_off)[0] == 200, timeout=10)
    with WebSocketClient(cut_off.url, timeout=20) as viewer:
        assert publish(publisher, "before")[0] == 200
        receive_until(viewer, "before")

        getattr(proxy, cut)()
        took = seconds_until_unhealthy(cut_off)
        assert took <= UNHEALTHY_WITHIN_S, "503 after %.1f s" % took
        during = ["during %d" % n for n in range(20)]
        assert [publish(publisher, message)[0] for message in during] == [200] * 20

        proxy.forward()
        assert "stalled" not in statuses_until_healthy(cut_off, 15), "an outage is not a stall"
        assert receive_until(viewer, during[-1]) == during


def test_a_redis_that_refuses_writes_keeps_its_brokers_unavailable_never_stalled(start_redis, start_cluster):
    """NOREPLICAS here (MISCONF, READONLY and NOPERM alike): Redis answers, and refuses every
    write, the audience report's included, whose round trip then stops: the brokers keep
    their clients, which a stall would send away, and nothing else would take."""
    server = start_redis()
    broker, = start_cluster(server, 1)
    store = redis.Redis.from_url(server.url)
    wait_until(lambda: health(broker)[0] == 200, timeout=10)
    store.config_set("min-replicas-to-write", 1)
    wait_until(lambda: health(broker)[1] == "unavailable", timeout=5)
    time.sleep(ROUND_TRIP_BOUND_S + 1)  # past the round trip's bound, which a stall would answer
    assert health(broker)[1] == "unavailable" and "NOREPLICAS" in broker.request("GET", "/healthz")[1]["reason"]
    store.config_set("min-replicas-to-write", 0)
    assert statuses_until_healthy(broker, 10) <= {"unavailable", "ok"}
    store.close()


def in_process(server, test):
    """Run ``test(backplane)`` on a backplane of ``server`` and a room, in this process, with
    the liveness a broker gives it: what it returns."""

    async def run():
        backplane = backplane_module.Backplane(server.url, "/broadcast")
        backplane.liveness = Liveness(time.monotonic(), round_trips=True)
        await backplane.start(Hub(asyncio.get_running_loop().call_soon, relay=backplane.append))
        try:
            return await test(backplane)
        finally:
            await backplane.stop()

    try:
        return asyncio.run(run())
    finally:
        server.stop()


async def until(condition, seconds):
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        await asyncio.sleep(0.05)


def test_a_read_loop_that_fails_on_its_own_defect_reads_on_and_is_counted(redis_installed, monkeypatch):
    real_read = backplane_module.Backplane._read
    failures = []

    async def read_once_failing(self):
        if not failures:
            failures.append(True)
            raise RuntimeError("a defect")
        return await real_read(self)

    monkeypatch.setattr(backplane_module.Backplane, "_read", read_once_failing)

    async def publish_after_the_failure(backplane):
        await until(lambda: backplane.state.read_restarts and backplane.state.is_up, 5)
        backplane.append('"after"')
        assert await backplane.written()
        await until(lambda: backplane.state.delivered, 5)
        return backplane.stats()

    stats = in_process(redis_server.RedisServer(), publish_after_the_failure)
    assert stats["read_restarts"] == 1 and stats["delivered"] == 1 and stats["state"] == "up"


def test_a_broker_whose_own_writes_stop_coming_back_is_stalled_while_redis_answers(redis_installed, monkeypatch):
    """Its audience report stuck (a task that does not return until the test ends): nothing
    proves its read loop delivers, though every call to Redis is answered."""
    released = []

    async def stuck(self, count):
        released.append(asyncio.Event())
        await released[-1].wait()
        return count, 1, None

    async def stalled_after_the_bound(backplane):
        await until(lambda: backplane.state.is_up and backplane.liveness.round_trip_age(time.monotonic()) < 1, 5)
        assert backplane.liveness.stalled(time.monotonic()) is None
        monkeypatch.setattr(AudienceReport, "send", stuck)
        await until(lambda: backplane.liveness.stalled(time.monotonic()), ROUND_TRIP_BOUND_S + 3)
        for event in released:
            event.set()
        return backplane.state.is_up, backplane.liveness.stalled(time.monotonic())

    up, stalled = in_process(redis_server.RedisServer(), stalled_after_the_bound)
    assert up and "came back through its read loop" in stalled
