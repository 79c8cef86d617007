"""The shipped browser client, broker-client.js, in Chromium on every transport, through
the shipped haproxy config in front of two brokers that share the room through Redis:
numbered messages published while a broker is killed with SIGKILL and restarted, Redis is
restarted with its append-only file, and the brokers cut every connection after 5 s
(--max-connection-age): every page ends with the complete sequence, no gap and no
duplicate. Then Redis comes back without its data: every page reports exactly one gap.

Messages go out at 20 a second, not more: every browser here is one client address to
haproxy, whose per-address limit (1000 requests in 10 s) the polling pages would
otherwise reach together."""

import os
import shutil
import signal
import urllib.parse

import deployment
from chromium_scripts import ReportingScript
from loadtest.contenders import haproxy
from live_room import Publisher
from sockjs_clients import wait_until
from test_transports import TRANSPORTS

RATE = 20
TOKEN = "t"
# Heartbeats every second: the pages take 3 s of silence as a dead connection.
FLAGS = ("--publish-token", TOKEN, "--max-connection-age", "5", "--heartbeat-delay", "1")


def healthy(broker):
    try:
        return broker.request("GET", "/healthz")[0] == 200
    except OSError:
        return False


def test_every_page_keeps_the_complete_sequence_through_faults(start_redis, start_broker, tmp_path):
    deployment.require_haproxy()
    redis_dir = tmp_path / "redis"
    redis_dir.mkdir()
    redis = start_redis(redis_dir)

    def start(port):
        return start_broker("--port", str(port), "--redis", redis.url, *FLAGS)

    # Each on a port of its own choosing (one picked here could be taken before it binds),
    # and again on the same one when restarted.
    brokers = [start(0) for _ in range(2)]
    ports = [urllib.parse.urlsplit(broker.url).port for broker in brokers]
    proxy = haproxy.HAProxy(ports, str(tmp_path), source=deployment.HAPROXY_CONFIG)
    try:
        proxy.wait_ready()
        with ReportingScript("resume.js", proxy.origin, ",".join(TRANSPORTS), "phase-1", "phase-2") as browser:
            assert browser.next_report() == {"ready": True}
            publisher = Publisher(brokers, RATE, TOKEN)
            publisher.start()
            try:
                wait_until(lambda: publisher.sent >= 2 * RATE, timeout=20)
                os.kill(brokers[0].server.pid, signal.SIGKILL)
                brokers[0].server.process.wait(5)
                brokers[0] = start(ports[0])
                wait_until(lambda: publisher.sent >= 4 * RATE, timeout=30)
                redis.kill()
                redis.start()
                wait_until(lambda: all(healthy(b) for b in brokers), timeout=15)
                wait_until(lambda: publisher.sent >= 10 * RATE, timeout=60)
            finally:
                publisher.stopping.set()
                publisher.join(30)
            publisher.publish("phase-1")
            first = browser.next_report()
            expected = [str(n) for n in range(publisher.sent)] + ["phase-1"]
            for transport, page in first["pages"].items():
                assert page["gaps"] == [], (transport, page["gaps"])
                assert page["log"] == expected, (transport, sorted(set(expected) ^ set(page["log"]))[:20],
                                                 len(page["log"]) - len(set(page["log"])))
                assert page["opens"] >= 2, (transport, "never cut")

            redis.kill()
            shutil.rmtree(redis_dir)
            redis_dir.mkdir()
            redis.start()
            wait_until(lambda: all(healthy(b) for b in brokers), timeout=15)
            publisher.publish("phase-2")
            second = browser.next_report()
            for transport, page in second["pages"].items():
                assert page["gaps"] == ["epoch"], (transport, page["gaps"])
                assert page["log"] == expected + ["phase-2"], (transport, page["log"][len(expected) - 2:])
            browser.wait(20)
    finally:
        proxy.stop()


def test_the_broker_serves_its_browser_client(start_broker):
    broker = start_broker()
    status, text = broker.request("GET", "/static/broker-client.js")
    assert status == 200 and "function BrokerClient" in text
