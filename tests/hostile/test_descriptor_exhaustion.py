"""At the open-files limit the broker neither spins nor floods its log.

By default --max-connections leaves part of the open-files limit free, so
connections beyond it are refused with 503 and accept() never fails. Set above
what the limit allows, accept() fails with EMFILE: the broker then stops
accepting for a moment and logs one line per pause; clients already connected
keep being served, and new ones are served again as soon as descriptors free up.
"""

import json
import time

from probes import Canary, Usage, connect, get, open_fds
from sockjs_clients import wait_until

OPEN_FILES = 160
FLOOD = 200
WATCH_S = 3.0


def test_default_limit_refuses_before_the_file_limit(start_broker):
    broker = start_broker(open_files=OPEN_FILES)
    monitor = connect(broker)
    with Canary(broker) as canary:
        usage = Usage(broker)
        flood = [connect(broker) for _ in range(FLOOD)]
        refused = FLOOD + 2 - (OPEN_FILES - 64)

        def every_connection_taken():
            # The broker takes a few connections a loop iteration: the stats may answer first.
            stats = json.loads(get(broker, "/stats", sock=monitor)[2])
            return stats if stats["refused"]["max_connections"] >= refused else None

        stats = wait_until(every_connection_taken)
        # The open-files limit less the reserve of 64 descriptors.
        assert stats["tcp_connections"] == OPEN_FILES - 64
        assert stats["refused"]["max_connections"] == refused
        assert stats["accept_pauses"] == 0
        assert open_fds(broker.server.pid) < OPEN_FILES - 32
        canary.round_trip()
        assert usage.log_bytes() == 0
        for sock in flood:
            sock.close()
        wait_until(lambda: get(broker, "/healthz")[0] == 200)
        canary.round_trip()
    monitor.close()


def test_at_emfile_the_broker_pauses_accepting_and_recovers(start_broker):
    broker = start_broker("--max-connections", "1000", "--header-timeout", "60",
                          open_files=OPEN_FILES)
    assert "more than the open-files limit" in broker.server.output
    monitor = connect(broker)
    with Canary(broker) as canary:
        flood = [connect(broker) for _ in range(FLOOD)]
        wait_until(lambda: json.loads(get(broker, "/stats", sock=monitor)[2])["accept_pauses"] >= 1)
        usage = Usage(broker)
        deadline = time.monotonic() + WATCH_S
        while time.monotonic() < deadline:
            canary.round_trip()
            time.sleep(0.1)
        # One line per pause of a second, not one per pass of the loop.
        assert usage.log_bytes() <= 200 * (WATCH_S + 1), broker.server.output[-2000:]
        assert usage.cpu_share() < 0.2, "the broker spins at the file limit"
        assert "not accepting connections for 1s: Too many open files" in broker.server.output
        assert open_fds(broker.server.pid) <= OPEN_FILES

        for sock in flood:
            sock.close()
        freed = time.monotonic()
        wait_until(lambda: get(broker, "/healthz")[0] == 200, timeout=5)
        assert time.monotonic() - freed < 1.0 + 1.0
        canary.round_trip()
    monitor.close()
