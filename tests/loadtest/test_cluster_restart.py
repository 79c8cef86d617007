"""One broker of a running cluster stopped with SIGTERM and started again on its port, as a deploy does."""

import asyncio
import sys

from loadtest.client import server_probe
from loadtest.contenders import child_process, registry, server_group


def test_a_broker_exits_on_sigterm_and_comes_back_on_its_port_beside_the_others(redis_installed):
    cluster = server_group.launch(registry.resolve("cluster-cpython"), brokers=2, flags=["--drain-seconds", "1"])
    try:
        urls, pids = cluster.urls, cluster.pids()
        assert cluster.terminate(0, timeout=10) == 0
        assert asyncio.run(server_probe.health(urls[0])) is None
        cluster.start_again(0)
        assert cluster.urls == urls
        assert cluster.pids()["broker1"] != pids["broker1"]
        assert (cluster.pids()["broker2"], cluster.pids()["redis"]) == (pids["broker2"], pids["redis"])
        assert asyncio.run(server_probe.until_healthy(urls[0], timeout=10))
        assert "--redis" in cluster.servers[0].argv
    finally:
        cluster.stop()


def test_a_server_still_running_after_the_wait_is_not_given_an_exit_code():
    server = child_process.launch([sys.executable, "-c", "import signal, time; "
                                   "signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                                   "print('listening on http://127.0.0.1:9/x', flush=True); time.sleep(30)"])
    try:
        assert server.terminate(0.3) is None
        assert server.process.poll() is None
    finally:
        server.stop(timeout=2)
    assert server.process.poll() is not None


def test_nothing_answers_health_where_no_broker_listens():
    assert asyncio.run(server_probe.until_healthy("http://127.0.0.1:9/broadcast", timeout=0.2)) is False
