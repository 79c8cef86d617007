"""A broker killed under its pages is noticed at once on every transport, and one that hangs
within seconds, at the default heartbeat (25 s) and the shipped client's default silence
timer (60 s).

The shipped browser client, broker-client.js, in Chromium, a page per transport, through the
shipped haproxy config in front of two brokers run by the systemd unit, sharing the room
through Redis. Every page opens while the second broker is down, so that all are held by the
first; the second comes back, numbered messages go out at 10 a second, and the first is
killed with SIGKILL, or stopped with SIGSTOP (a hung broker: haproxy's checks mark it down
and shut its connections, docs/deployment.rst "Health checks and their timings"). Every page
must reopen on the second within a few seconds, far inside its silence timer, and deliver
every message once, in order, without a gap.

This is what an htmlfile page missed when the broker chunked its body: the kill cut the body
short, Chromium left the iframe's document loading for good, firing nothing, and the page
heard of it only from its silence timer (:mod:`broker.transports.streams`)."""

import json
import os
import signal
import subprocess
import time

import pytest

from live_room import Publisher
from sockjs_clients import wait_until
from test_transports import TRANSPORTS

HERE = os.path.dirname(os.path.abspath(__file__))
RATE = 10
TOKEN = "t"
MARKER = "after-the-kill"
# How soon a page must be open again after the kill: a reconnect takes a second or less
# (its random wait is up to 0.5 s); the silence timer would take 60 s. After a stop, haproxy
# shuts the broker's connections 2.5 to 3.5 s later: the page is open again within 5 s.
REOPEN_S = {"SIGKILL": 10, "SIGSTOP": 5}
# How long the pages get to deliver the marker: less than the silence timer, so that a page
# that missed the kill fails here rather than recover by it.
WAIT_MS = 25000


def down_in_haproxy(proxy, port):
    states = proxy.server_states()
    return all(states.get((backend, "broker%d" % port)) not in (None, "UP") for backend in ("brokers", "sessions"))


@pytest.mark.parametrize("signal_name", sorted(REOPEN_S))
def test_every_transport_notices_its_broker_killed_within_seconds(start_redis, start_cluster, signal_name):
    redis = start_redis()
    cluster = start_cluster(2, "--redis", redis.url, "--publish-token", TOKEN)
    first, second = cluster.brokers
    os.kill(second.server.pid, signal.SIGKILL)
    second.server.process.wait(5)
    wait_until(lambda: down_in_haproxy(cluster.proxy, cluster.proxy.broker_ports[1]), timeout=15)

    browser = subprocess.Popen(["node", os.path.join(HERE, "dead_broker.js"), cluster.origin, ",".join(TRANSPORTS),
                                str(WAIT_MS), MARKER], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ready = browser.stdout.readline()
        if not ready:
            browser.wait(10)
            pytest.fail("dead_broker.js ended: %s" % browser.stderr.read()[-8000:], pytrace=False)
        assert json.loads(ready) == {"ready": True}
        second = cluster.start_again(1)
        assert second.stats()["sessions"] == 0, "a page is held by the second broker already"

        publisher = Publisher([second], RATE, TOKEN)
        publisher.start()
        wait_until(lambda: publisher.sent >= 2 * RATE, timeout=20)
        killed_at = time.time()
        os.kill(first.server.pid, getattr(signal, signal_name))
        if signal_name == "SIGKILL":
            first.server.process.wait(5)
        wait_until(lambda: publisher.sent >= 5 * RATE, timeout=20)
        sent = publisher.stop()
        publisher.publish(MARKER)
        out, err = browser.communicate(timeout=WAIT_MS / 1000 + 30)
    finally:
        first.server.process.send_signal(signal.SIGCONT)
        if browser.poll() is None:
            browser.kill()
            browser.wait()
    assert browser.returncode == 0, err[-8000:]
    pages = json.loads(out.rstrip("\n").split("\n")[-1])["pages"]

    expected = [str(n) for n in range(sent)] + [MARKER]
    for transport, page in pages.items():
        reopened = [(at / 1000 - killed_at) for at in page["opens"] if at / 1000 > killed_at]
        assert reopened, (transport, "never reopened after the " + signal_name, page["closes"], page["log"][-3:])
        assert reopened[0] < REOPEN_S[signal_name], (transport, "reopened %.1f s after the %s" % (
            reopened[0], signal_name))
        assert page["gaps"] == [], (transport, page["gaps"])
        assert page["log"] == expected, (transport, sorted(set(expected) ^ set(page["log"]))[:20],
                                         len(page["log"]) - len(set(page["log"])))
