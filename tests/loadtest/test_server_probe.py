"""Interpreter names: the client's own, and a server's from its ``/stats``; the server's processes, by its port."""

import pytest

from broker.runtime import interpreter
from loadtest.client import server_probe


@pytest.mark.parametrize("prefix", ["/broadcast", "/a/b/broadcast/"])
def test_the_server_runtime_comes_from_stats_at_the_root(broker_server, prefix):
    origin = broker_server.url.rsplit("/", 1)[0]
    assert server_probe.server_runtime(origin + prefix, None).startswith(("CPython ", "PyPy "))


def test_the_client_names_its_interpreter_as_the_broker_does(broker_server):
    """The broker runs on this interpreter: its ``/stats`` and the client must agree to the letter."""
    assert server_probe.server_runtime(broker_server.url, None) == interpreter()


def test_without_stats_the_runtime_is_the_executable(broker_server):
    with_no_stats = "http://127.0.0.1:9/broadcast"
    assert server_probe.server_runtime(with_no_stats, broker_server.pid).startswith(("python", "pypy"))
    assert server_probe.server_runtime(with_no_stats, None) is None


def test_the_server_is_the_process_listening_where_the_url_points(broker_server):
    port = broker_server.url.split("/")[2].rpartition(":")[2]
    assert server_probe.listening_pids([broker_server.url]) == [broker_server.pid]
    assert server_probe.listening_pids(["http://localhost:%s/broadcast" % port]) == [broker_server.pid]
    assert server_probe.listening_pids(["http://127.0.0.2:%s/broadcast" % port]) == []
    assert server_probe.listening_pids(["http://127.0.0.1:9/broadcast"]) == []
