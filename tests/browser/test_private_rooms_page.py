"""broker-client.js in a private room, in Chromium, on every transport at once against one broker
run with --token-secret and --private-rooms (private_rooms.js): the page's getToken() is backed
by the driver, which signs tokens with jsonwebtoken as a page's backend would.

* A page whose tokens last 10 s keeps its one session while numbered messages go to its room for
  longer than one of them: it refreshes in-band (twice at least), the broker never closes it,
  and it delivers every message once, in order, and none of its token messages.
* A page whose getToken() stops giving fresh tokens (the same one again, or one past its exp)
  is closed with 3017 when its token expires, asks for one more token, and stops: one
  connection, never a loop, seconds after it stopped.
* A page with a forged token (another secret) stops on 3016, and one without getToken on 3015.

And the getting-started page's private room page, as written, with the token its Node backend
block prints, receives what a backend publishes in the room (readme_example.js).
"""

import re
import subprocess
import time

import doc_blocks
from broker.protocol import close_codes
from checkout import ROOT
from chromium_scripts import ReportingScript
from test_transports import TRANSPORTS

TOKEN = "t"
SECRET = "the-test-backends-secret-32-characters-or-more"
ROOM = "donors"
FLAGS = ("--publish-token", TOKEN, "--token-secret", SECRET, "--private-rooms", ROOM)
# Messages a second, and for how long: more than one of the fresh page's 10 s tokens (refreshed
# every 5 s or so, 5 s before their exp: a loaded machine's page took over 2.5 s once), and long
# enough after the stale pages stopped (their tokens last 3 s) for a loop to show.
RATE = 20
PUBLISH_S = 12
MARKER = "end"
OPEN = ["connecting", "open"]
EXPIRED = "closed %d %s" % close_codes.TOKEN_EXPIRED
GETTING_STARTED = doc_blocks.page("getting-started")
EXAMPLE_ORIGIN = "http://127.0.0.1:8083"


def publish(broker, text):
    status, answer = broker.request("POST", "/publish?room=" + ROOM, text.encode(),
                                    {"Authorization": "Bearer " + TOKEN})
    assert status == 200, answer


def publish_for(broker, seconds):
    """Publish "0", "1", ... at RATE a second for ``seconds``; returns how many."""
    start = time.monotonic()
    n = 0
    while time.monotonic() < start + seconds:
        publish(broker, str(n))
        n += 1
        time.sleep(max(0.0, start + n / RATE - time.monotonic()))
    return n


def test_a_page_refreshes_its_token_in_band_and_one_without_a_fresh_token_stops(start_broker):
    broker = start_broker(*FLAGS)
    with ReportingScript("private_rooms.js", broker.origin, ",".join(TRANSPORTS), ROOM, MARKER,
                         env={"TOKEN_SECRET": SECRET}) as browser:
        assert browser.next_report() == {"ready": True}
        sent = publish_for(broker, PUBLISH_S)
        publish(broker, MARKER)
        pages = browser.next_report()["pages"]
        assert sorted(pages) == sorted(TRANSPORTS)
        for transport, clients in pages.items():
            # Each client's session: from the attempt that opened (one before may have failed
            # to open while 16 pages load from a cold broker); getToken() was asked once for
            # each attempt, and more as the rest of the client's life says.
            sessions = {name: found["states"][found["states"].index("open") - 1:] for name, found in clients.items()}
            attempts = {name: found["states"].count("connecting") for name, found in clients.items()}
            fresh = clients["fresh"]
            assert sessions["fresh"] == OPEN, (transport, fresh["states"])
            assert fresh["tokens"] >= attempts["fresh"] + 2, (transport, "refreshed %d times" % (fresh["tokens"] - 1))
            assert fresh["log"] == [str(n) for n in range(sent)] + [MARKER], (transport, fresh["log"][-5:])
            for name in ("stale", "expired"):
                # Seconds after it stopped: one refresh that brought nothing fresher, one token
                # after the 3017, and no attempt since.
                assert sessions[name] == OPEN + [EXPIRED, "stopped: getToken() gave a token past its exp"], (
                    transport, name, clients[name]["states"])
                assert clients[name]["tokens"] == attempts[name] + 2, (transport, name, clients[name])
            assert sessions["forged"] == OPEN + ["stopped %d %s" % close_codes.TOKEN_REFUSED], (transport, clients["forged"])
            assert clients["forged"]["tokens"] == attempts["forged"]
            assert sessions["tokenless"] == OPEN + ["stopped %d %s" % close_codes.TOKEN_REQUIRED], (
                transport, clients["tokenless"])
        browser.wait(20)


def test_the_getting_started_pages_private_room_works_as_written(start_broker, browser_script):
    backend = doc_blocks.named_block(GETTING_STARTED, "token-backend-node")
    (secret,) = re.findall(r"const SECRET = '([^']+)'", backend)
    minted = subprocess.run(["node", "-e", backend], cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert minted.returncode == 0, minted.stderr
    page = doc_blocks.block_holding(GETTING_STARTED, "getToken: function")
    assert page.count(EXAMPLE_ORIGIN) == 3, page
    broker = start_broker("--publish-token", TOKEN, "--token-secret", secret, "--private-rooms", ROOM)
    result = browser_script("readme_example.js", broker.origin, TOKEN, page.replace(EXAMPLE_ORIGIN, broker.origin),
                            ROOM, env={"BROKER_TOKEN": minted.stdout.strip()})
    assert any(line.startswith("log: received in donors: from a backend") for line in result["console"]), result
