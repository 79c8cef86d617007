"""The README and the getting-started page, every literal block in document order, as a reader
follows them: one quick-start broker for both pages, the other brokers started by their own
lines, each block run, checked against what the page says beside it, or skipped for a reason.

Rules:

* :data:`STEPS` classifies every block of the two pages, in order: a step names its page, a text
  its block holds, and what the test does with it (a function of the walk and the block's text)
  or why it does not run it (a reason, which names the test that covers it where one does). A
  block no step classifies, or a step whose block is gone, fails the test before anything runs.
* A block that starts a broker is run by the test's own broker, started with the block's own
  variables and flags (:func:`test_readme_commands.start_as_written`), on an ephemeral port; the
  origin the pages give it (``http://127.0.0.1:8080``) is replaced by the test broker's in the
  blocks that follow. Nothing else in a block is changed but the backend's one-second sleeps.
* What a page says next to a block is checked where it can be: a total, who receives what, an
  answer's shape beside the answer printed.
"""

import ast
import html
import json
import re
import subprocess
import sys
import threading
from contextlib import ExitStack
from decimal import Decimal

import doc_blocks
import documentation
from sockjs_clients import RawWebSocketClient, WebSocketClient, wait_until
from test_private_rooms_commands import node_token, python_token
from test_readme_commands import EXAMPLE_ORIGIN, GETTING_STARTED, quick_start_broker, start_as_written

README = doc_blocks.README
DONATION = Decimal("24.99")
BACKEND_SECONDS = 120


class Walk:
    """What a reader has open while following the pages: the brokers by the origin the pages give
    them, the demo page (a client of the quick start's default room), and what the last command
    printed."""

    def __init__(self, start_broker, resources):
        self.start_broker = start_broker
        self.resources = resources
        self.brokers = {}
        self.demo = None
        self.printed = []
        self.tokens = []

    @property
    def quick(self):
        return self.brokers[EXAMPLE_ORIGIN]

    def opened(self, client):
        """``client``, open, closed when the test ends."""
        return self.resources.enter_context(client)

    def start(self, line):
        broker, origin = start_as_written(self.start_broker, line)
        assert origin not in self.brokers, "two brokers on %s" % origin
        self.brokers[origin] = broker
        return broker

    def here(self, text):
        """``text`` with every origin the pages give a broker (``http://`` or ``ws://``) replaced by its
        test broker's."""
        origins = {origin: broker.origin for origin, broker in self.brokers.items()}
        origins.update({"ws" + origin[4:]: "ws" + broker[4:] for origin, broker in origins.items()})
        return doc_blocks.substituted(text, origins)

    def run(self, text):
        """Each command line of the shell block ``text``, here: what each printed."""
        self.printed = [doc_blocks.run_shell(self.here(line)) for line in doc_blocks.command_lines(text)]
        return self.printed


def total(answer_text):
    return Decimal(json.loads(answer_text)["value"])


# -- the README ----------------------------------------------------------------------------------

def quick_start(walk, text):
    """The install is test_quick_start.py's (in a copy of the checkout); its broker is started here,
    and the demo page is opened on it, as the next section has it open."""
    walk.brokers[EXAMPLE_ORIGIN] = quick_start_broker(walk.start_broker)
    walk.demo = walk.opened(WebSocketClient(walk.quick.url))
    wait_until(lambda: walk.quick.stats()["connections_total"] == 1)


def first_add(walk, text):
    (answer,) = walk.run(text)
    assert walk.demo.receive() == [{"counter": "raised", "value": "25"}], "the page shows 25"
    assert total(answer) == 25


def shown_answer(walk, text):
    """The answer the page shows has the keys, the position and the epoch's length of the one printed."""
    shown, given = json.loads(text), json.loads(walk.printed[-1])
    assert walk.printed[-1] == json.dumps(given, separators=(",", ":")) + "\n", "not the answer's form"
    assert shown.keys() <= given.keys() and shown["position"].keys() == given["position"].keys(), (shown, given)
    assert len(shown["position"]["epoch"]) == len(given["position"]["epoch"]), "the broker's epochs are not so long"
    if "value" in shown:
        assert (given["recipients"], given["value"]) == (shown["recipients"], shown["value"]), (given, shown)


def retried_add(walk, text):
    """Run twice, as a retry would: it adds once."""
    source = walk.here(text)
    answers = [ast.literal_eval(run_source(source)) for _ in range(2)]
    assert answers[0] == answers[1] and answers[0]["value"] == "50", answers
    assert walk.demo.receive() == [{"counter": "raised", "value": "50"}]


def run_source(source):
    done = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


# -- getting started -----------------------------------------------------------------------------

def same_quick_start(walk, text):
    assert text == doc_blocks.block_holding(README, "pip install -q -e ."), "the README's quick start, another way"


def listening_line(walk, text):
    assert text == "broker listening on %s/broadcast" % EXAMPLE_ORIGIN
    assert "broker listening on %s\n" % walk.quick.url in walk.quick.server.output


def added_twice(walk, text):
    """The page's claims, after the README's two adds: 1234.50 more each time, ``2519.00``."""
    (first,) = walk.run(text)
    (again,) = walk.run(text)
    assert total(again) - total(first) == Decimal("1234.50") and total(first) == Decimal("1284.50"), (first, again)
    with open(GETTING_STARTED) as f:
        assert "``%s`` if the README's two adds of 25 came first" % json.loads(again)["value"] in f.read()
    assert [m["value"] for m in walk.demo.collect(2)] == ["1284.50", "2519.00"]


def campaigns(walk, text):
    both = walk.opened(WebSocketClient(walk.quick.url, query="rooms=spring,autumn"))
    wait_until(lambda: walk.quick.stats()["connections_total"] == 3)  # the demo page, and both in two rooms
    walk.run(text)
    assert sorted(both.collect(2), key=lambda message: message["r"]) == [
        {"r": "autumn", "d": {"counter": "raised", "value": "40"}},
        {"r": "spring", "d": {"counter": "raised", "value": "100"}}]
    walk.demo.send("the default room's own")
    assert walk.demo.receive() == ["the default room's own"], "a campaign's total reached the default room"


def plain_websocket(walk, text):
    assert walk.here(text) == "ws" + walk.quick.url[len("http"):] + "/websocket"
    raw = walk.opened(RawWebSocketClient(walk.quick.url))
    wait_until(lambda: walk.quick.stats()["connections_total"] == 4)
    walk.demo.send("hello, room")
    # A connection starts with the counters' totals ("a page opened later shows the total at once").
    assert raw.receive() + raw.receive() == ['{"counter":"raised","value":"2519.00"}', "hello, room"], (
        "one text frame a message, without SockJS's framing")


def start_broker_as_written(walk, text):
    (line,) = doc_blocks.command_lines(text)
    walk.start(line)


def backend_and_restart(walk, text):
    """Step 3's backend, and step 4: the broker restarted, on its port, while the backend runs."""
    assert text.count("time.sleep(1)") == 2
    broker = walk.brokers["http://127.0.0.1:8081"]
    counter_page = walk.opened(WebSocketClient(broker.url))
    source = walk.here(text).replace("time.sleep(1)", "time.sleep(0.05)")
    backend = subprocess.Popen([sys.executable, "-u", "-c", source],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    try:
        while len(lines) < 5:
            lines.append(backend.stdout.readline())
            assert lines[-1], backend.stderr.read()
        assert {ast.literal_eval(line)["recipients"] for line in lines} == {1}, "the counter page received each"
        counter_page.close()
        broker.server.stop()
        again = broker.server.started_again()
        walk.resources.callback(again.stop)
        rest = threading.Thread(target=lambda: lines.extend(backend.stdout))
        rest.start()
        backend.wait(BACKEND_SECONDS)
        rest.join(BACKEND_SECONDS)
    finally:
        backend.kill()
    assert backend.returncode == 0, backend.stderr.read()
    totals = [Decimal(ast.literal_eval(line)["value"]) for line in lines if not line.startswith("retrying:")]
    (restart,) = [n for n in range(1, len(totals)) if totals[n] < totals[n - 1]]
    assert len(totals) == 100 and totals[restart] == DONATION, totals
    assert totals[restart:] == [DONATION * n for n in range(1, len(totals) - restart + 1)], totals
    assert totals[-1] < Decimal("2499.00"), "short of 2499.00"


def token_from(backend):
    def mint(walk, text):
        token = backend()
        assert token.count(".") == 2, "one JWT, printed alone"
        walk.tokens.append(token)
    return mint


def donors_thanked(walk, text):
    broker = walk.brokers["http://127.0.0.1:8083"]
    pages = [walk.opened(WebSocketClient(broker.url, query="rooms=donors&positions=1")) for _ in walk.tokens]
    for page, token in zip(pages, walk.tokens):
        page.send(json.dumps({"token": token}))
        (start,) = page.receive()
        assert start["c"] == "open", start
    (answer,) = walk.run(text)
    assert json.loads(answer)["recipients"] == len(pages) == 2, answer
    for page in pages:
        (message,) = page.receive()
        assert message["d"] == "thank you, donors", message


BROWSER = "a page's HTML, for a browser: tests/browser/ run broker-client.js and the demo in Chromium"
# (page, a text its block holds, what the test does with it or why it does not run it), in order.
STEPS = (
    (README, "pip install -q -e .", quick_start),
    (README, "pip install -q tox", "the whole suite, which runs this test: test_readme_commands.py checks it is "
                                   "the command CI runs"),
    (README, "-d 25 ", first_add),
    (README, '{"recipients":1,', shown_answer),
    (README, "urllib.request", retried_add),
    (README, "new BrokerClient(", BROWSER),
    (GETTING_STARTED, "pip install -q -e .", same_quick_start),
    (GETTING_STARTED, "broker listening on", listening_line),
    (GETTING_STARTED, "-d 1234.50 ", added_twice),
    (GETTING_STARTED, "room=spring", campaigns),
    (GETTING_STARTED, '{"recipients":2,', shown_answer),
    (GETTING_STARTED, "new SockJS(", BROWSER),
    (GETTING_STARTED, "new BrokerClient(", BROWSER),
    (GETTING_STARTED, "ws://", plain_websocket),
    (GETTING_STARTED, "--no-client-publish --port 8081", start_broker_as_written),
    (GETTING_STARTED, "Raised so far", BROWSER + "; test_readme_commands.py checks the broker it names"),
    (GETTING_STARTED, "Idempotency-Key", backend_and_restart),
    (GETTING_STARTED, "--private-rooms donors --port 8083", start_broker_as_written),
    (GETTING_STARTED, "import jwt", token_from(python_token)),
    (GETTING_STARTED, "require('jsonwebtoken')", token_from(node_token)),
    (GETTING_STARTED, "getToken:", BROWSER),
    (GETTING_STARTED, "room=donors", donors_thanked),
    (GETTING_STARTED, "-m loadtest", "a minute and a half of load: test_load_test_output.py runs it with short steps"),
    (GETTING_STARTED, "sweeping http://", "the load test's output: test_load_test_output.py compares it with a run's"),
)


def classified():
    """``[(block, what to do)]`` of both pages in order; fails naming the first block out of step."""
    blocks = [(page, block) for page in (README, GETTING_STARTED) for block in doc_blocks.literal_blocks(page)]
    for n, ((page, block), (step_page, needle, _)) in enumerate(zip(blocks, STEPS)):
        assert page == step_page and needle in block.text, (
            "%s:%d: no step of STEPS classifies this block (step %d expects one holding %r): run it, check it "
            "or give the reason it does not run" % (page, block.line, n, needle))
    assert len(blocks) == len(STEPS), "%d blocks, %d steps: classify every block in STEPS" % (len(blocks), len(STEPS))
    return [(block, step[2]) for (_, block), step in zip(blocks, STEPS)]


def test_every_block_of_the_readme_and_getting_started_runs_in_order_as_the_pages_say(start_broker):
    steps = classified()
    with ExitStack() as resources:
        walk = Walk(start_broker, resources)
        for block, what in steps:
            if callable(what):
                what(walk, block.text)


def test_the_demo_pages_publish_hint_runs_as_pasted(start_broker):
    broker = quick_start_broker(start_broker)
    status, page = broker.request("GET", "/")
    assert status == 200
    (hint,) = [html.unescape(re.sub(r"<[^>]+>", "", text)) for text in re.findall(r'<pre class="hint">(.*?)</pre>',
                                                                                  page, re.DOTALL)]
    with WebSocketClient(broker.url) as demo:
        answer = doc_blocks.run_shell(hint.replace("http://HOST:PORT", broker.origin))
        assert json.loads(answer)["value"] == "25.50" and demo.receive() == [{"counter": "raised", "value": "25.50"}]


def test_no_two_examples_of_the_docs_share_an_idempotency_key():
    """The same key with another body answers 422: a reader who runs two examples gets it."""
    keys = {}
    for path, text in documentation.pages():
        for block in documentation.literal_blocks(text):
            for key in re.findall(r"""Idempotency-Key["']?:\s*["']?([\w%-]+)""", block.text):
                keys.setdefault(key, []).append("%s:%d" % (path, block.line))
    assert len(keys) >= 3 and all(len(where) == 1 for where in keys.values()), keys
