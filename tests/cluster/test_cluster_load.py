"""The load client against a cluster: its connections spread over the brokers, their figures summed."""

import subprocess
import sys

from loadtest import records
from checkout import ROOT
import result_lines



def test_the_load_client_spreads_its_clients_over_the_brokers_of_a_cluster(start_redis, start_cluster, tmp_path):
    brokers = start_cluster(start_redis(), 2)
    out = tmp_path / "cluster.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "loadtest", "--url", ",".join(b.url for b in brokers),
         "--server-pid", ",".join(str(b.server.pid) for b in brokers),
         "--clients", "10", "--rate", "20", "--step-seconds", "1", "--pause", "0.1", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = [records.parse(line) for line in result_lines.read(str(out))]
    (step,) = [line for line in lines if line.TYPE == "step"]
    assert (step.lost, step.dropped, step.received) == (0, 0, step.sent * 10)
    assert step.server_cpu is not None and step.server_rss_kb > 2 * 20 * 1024  # both brokers, summed
    for broker in brokers:  # each carried half the clients: five deliveries of every message
        stats = broker.stats()
        assert stats["messages_out"] == 5 * step.sent, stats
