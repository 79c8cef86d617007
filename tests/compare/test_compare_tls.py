"""``compare --tls``: the brokers over TLS with a certificate made for the run, beside themselves plain, at tiny scale."""

import collections
import json
import os
import re
import subprocess
import sys

from loadtest import records as schema


def test_tls_both_measures_each_broker_plain_then_over_tls_and_skips_servers_without_it(tmp_path):
    out = tmp_path / "tls.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "loadtest", "compare", "--servers", "broker-cpython,sockjs-tornado", "--tls", "both",
         "--measure", "cpu,idle", "--transport", "websocket,xhr-polling", "--cpu-load", "6x5", "--cpu-seconds", "0.5",
         "--pause", "0.1", "--idle-connections", "10", "--out", str(out)],
        capture_output=True, text=True, timeout=90,
    )
    assert done.returncode == 0, done.stderr
    assert "skipped sockjs-tornado+tls: sockjs-tornado serves no TLS" in done.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [schema.parse(r).as_dict() for r in records] == records
    by_type = collections.defaultdict(list)
    for record in records:
        by_type[record["type"]].append(record)
    servers = [("broker-cpython", False), ("broker-cpython+tls", True), ("sockjs-tornado", False)]
    assert [(r["server"], r["tls"]) for r in by_type["server"]] == servers
    for kind in ("cpu_per_msg", "idle_rss"):
        assert [(r["server"], r["transport"], r["tls"]) for r in by_type[kind]] == [
            (server, transport, tls) for server, tls in servers for transport in ("websocket", "xhr-polling")], kind
    assert all(r["lost"] == 0 and r["cpu_us_per_msg"] is not None for r in by_type["cpu_per_msg"])
    assert all(r["connections"] == 10 for r in by_type["idle_rss"])
    # The broker over TLS served the run's certificate, which is gone with the run.
    launched = re.search(r"broker-cpython\+tls \(CPython [^)]*\): .* --certfile (\S+) --keyfile (\S+)", done.stderr)
    assert launched, done.stderr
    assert not os.path.exists(os.path.dirname(launched.group(1)))
    assert "vs plain: a server over TLS (+tls) against itself plain" in done.stdout
    assert re.search(r"^xhr-polling +broker-cpython\+tls ", done.stdout, re.MULTILINE), done.stdout


def compare(tmp_path, *argv, env=None):
    """``python -m loadtest compare`` that measures nothing: its exit status and stderr."""
    done = subprocess.run([sys.executable, "-m", "loadtest", "compare", *argv, "--out", str(tmp_path / "r.jsonl")],
                          capture_output=True, text=True, timeout=30, env=env)
    assert not (tmp_path / "r.jsonl").exists()
    return done.returncode, done.stderr


def test_tls_without_openssl_is_refused_clearly(tmp_path):
    without_openssl = dict(os.environ, PATH=str(tmp_path))
    status, err = compare(tmp_path, "--servers", "broker-cpython", "--tls", env=without_openssl)
    assert status == 1
    assert "--tls: the openssl command is needed to make a certificate for 127.0.0.1 (apt-get install openssl)" in err


def test_tls_with_only_servers_that_cannot_serve_it_measures_nothing(tmp_path):
    status, err = compare(tmp_path, "--servers", "sockjs-tornado", "--tls")
    assert status == 1
    assert "skipped sockjs-tornado+tls: sockjs-tornado serves no TLS" in err and "no server to measure" in err
