"""broker-client.js in named rooms, in Chromium, on every transport at once against one broker:
for each transport a page in room a, a page in room b and a page in both over one session
(rooms.js). Numbered messages go to both rooms while the broker cuts every session after 2 s
(--max-connection-age): every page delivers each of its rooms' messages once, in order, none
of a room it is not in, and the page in both resumes each room after its own position. Then
the broker is killed (SIGKILL) and started again on its port: both rooms' histories are gone,
and every page reports exactly one gap, ``epoch``, in each room it is in, followed by every
message of the room's new history. A client asking for a room of a bad name stops at the
broker's 3013 and never comes back; a page in both rooms sends nothing."""

import os
import signal
import time
import urllib.parse

from broker.protocol import close_codes
from chromium_scripts import ReportingScript
from sockjs_clients import wait_until
from test_transports import TRANSPORTS

TOKEN = "t"
ROOMS = ("a", "b")
# Messages a second in each room, and for how long before a restart: long enough for every
# session to be cut by its age (2 s, up to a second more) and to open again.
RATE = 20
PHASE_S = 4
FLAGS = ("--publish-token", TOKEN, "--max-connection-age", "2", "--heartbeat-delay", "1")
# How a page that asked for a room of a bad name ends: stopped by the broker's close.
REFUSED = "stopped %d %s" % close_codes.ROOM_REFUSED


def publish(broker, room, text):
    status, answer = broker.request("POST", "/publish?room=" + room, text.encode(),
                                    {"Authorization": "Bearer " + TOKEN})
    assert status == 200, answer


def publish_for(broker, seconds, first):
    """Publish numbered messages, ``a<n>`` in room a and ``b<n>`` in b, n from ``first``, at RATE a
    second for ``seconds``; returns the next n."""
    start = time.monotonic()
    n = first
    while time.monotonic() < start + seconds:
        for room in ROOMS:
            publish(broker, room, "%s%d" % (room, n))
        n += 1
        time.sleep(max(0.0, start + (n - first) / RATE - time.monotonic()))
    return n


def healthy(broker):
    try:
        return broker.request("GET", "/healthz")[0] == 200
    except OSError:
        return False


def messages(room, numbers, marker):
    return ["%s%d" % (room, n) for n in numbers] + [marker]


def test_pages_in_rooms_get_each_rooms_messages_once_in_order_through_cuts_and_a_restart(start_broker):
    broker = start_broker(*FLAGS)
    port = urllib.parse.urlsplit(broker.url).port
    with ReportingScript("rooms.js", broker.origin, ",".join(TRANSPORTS), "end-1", "end-2") as browser:
        ready = browser.next_report()
        assert ready["sends"] == {transport: False for transport in TRANSPORTS}, "a page of two rooms only listens"
        cut = publish_for(broker, PHASE_S, 0)
        for room in ROOMS:
            publish(broker, room, "end-1")
        first = browser.next_report()
        for transport, pages in first["pages"].items():
            for page in ("a", "b", "ab"):
                found = pages[page]
                assert sorted(found["log"]) == sorted(page), (transport, page, list(found["log"]))
                for room in page:
                    assert found["gaps"][room] == [], (transport, page, room, found["gaps"])
                    assert found["log"][room] == messages(room, range(cut), "end-1"), (transport, page, room)
                assert found["strays"] == [], (transport, page)
                assert found["opens"] >= 2, (transport, page, "never cut")

        os.kill(broker.server.pid, signal.SIGKILL)
        broker.server.process.wait(5)
        broker = start_broker(*FLAGS, "--port", str(port))
        wait_until(lambda: healthy(broker), timeout=15)
        end = publish_for(broker, PHASE_S / 2, cut)
        for room in ROOMS:
            publish(broker, room, "end-2")
        second = browser.next_report()
        for transport, pages in second["pages"].items():
            for page in ("a", "b", "ab"):
                found = pages[page]
                for room in page:
                    assert found["gaps"][room] == ["epoch"], (transport, page, room, found["gaps"])
                    assert found["log"][room] == (messages(room, range(cut), "end-1") +
                                                  messages(room, range(cut, end), "end-2")), (transport, page, room)
                assert found["strays"] == [], (transport, page)
            # Stopped at the refusal, and never connecting again (its first attempt may have
            # been taken as silent while 24 pages open together).
            states = pages["a"]["refused"]
            assert states[-1] == REFUSED and sum("3013" in state for state in states) == 1, (transport, states)
        browser.wait(20)
