"""Opening connections: source addresses, and failures reported by reason."""

import asyncio
import os
import resource
import socket

from loadtest.client import connections


def connect(url, count, **options):
    async def run():
        spec = connections.GroupSpec([url], source_addresses=options.pop("source_addresses", None))
        group = connections.ClientGroup(spec)
        try:
            failures = await group.connect(count, **options)
            return failures, [conn.local_address[0] for conn in group.alive()]
        finally:
            group.close()

    return asyncio.run(run())


def test_connections_spread_over_source_addresses(broker_server):
    failures, addresses = connect(broker_server.url, 6, source_addresses=["127.0.0.2", "127.0.0.3"])
    assert failures == {}
    assert sorted(addresses) == ["127.0.0.2"] * 3 + ["127.0.0.3"] * 3


def test_refused_connections_are_counted_by_reason():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    failures, addresses = connect("http://127.0.0.1:%d/broadcast" % port, 3)
    assert failures == {"refused": 3} and addresses == []


def test_a_silent_server_is_a_timeout():
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = "http://127.0.0.1:%d/broadcast" % silent.getsockname()[1]
        failures, _ = connect(url, 2, timeout=0.3)
    assert failures == {"timeout": 2}


def test_running_out_of_file_descriptors_is_a_reason_not_a_crash(broker_server):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    in_use = len(os.listdir("/proc/self/fd"))
    resource.setrlimit(resource.RLIMIT_NOFILE, (in_use + 8, hard))
    try:
        failures, addresses = connect(broker_server.url, 20)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert failures.get("too many open files", 0) > 0
    assert 0 < len(addresses) < 20
