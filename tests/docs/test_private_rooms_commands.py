"""The getting-started page's private room, run as written: its broker, started by its own line,
closes a session without a token with 3015; the tokens its backend blocks print (the Python one
with PyJWT on this interpreter, the Node one with node and the checkout's jsonwebtoken), which
test_pages_in_order.py gives pages that join the room, where the page's ``curl`` line publishes."""

import os
import subprocess
import sys

import pytest

import doc_blocks
from checkout import ROOT
from broker.protocol import close_codes
from sockjs_clients import Closed, WebSocketClient
from test_readme_commands import GETTING_STARTED, start_as_written

ROOM = "donors"


def python_token():
    source = doc_blocks.named_block(GETTING_STARTED, "token-backend-python")
    done = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def node_token():
    if not os.path.isdir(os.path.join(ROOT, "node_modules", "jsonwebtoken")):
        if os.environ.get("CI"):
            pytest.fail("node_modules/jsonwebtoken is missing: run `npm ci`", pytrace=False)
        pytest.skip("node_modules/jsonwebtoken is missing: run `npm ci`")
    source = doc_blocks.named_block(GETTING_STARTED, "token-backend-node")
    done = subprocess.run(["node", "-e", source], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def private_broker(start_broker):
    """The page's broker, as its line starts it, and the origin its other blocks name."""
    (line,) = doc_blocks.command_lines(doc_blocks.block_holding(GETTING_STARTED, "--private-rooms"))
    return start_as_written(start_broker, line)


def test_the_private_room_takes_no_page_without_a_token(start_broker):
    broker, _ = private_broker(start_broker)
    with WebSocketClient(broker.url, query="rooms=" + ROOM) as page:
        page.send("hello, donors")
        with pytest.raises(Closed) as closed:
            page.receive()
        assert (closed.value.code, closed.value.reason) == close_codes.TOKEN_REQUIRED
