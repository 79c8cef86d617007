"""The sample ``/stats`` of docs/monitoring.rst (the block named ``stats-sample``) is a live
broker's, as the page says it was taken: a broker in a cluster through Redis, with
``--announce-audience`` and ``--max-connection-age``, a websocket and an xhr-streaming client,
a message sent by one and one ``POST /publish``.

* The sample's top-level keys are the live answer's, both ways, but for what the page says
  appears only on PyPy (``jit``), so that neither a section the broker adds nor one it drops
  goes unseen.
* Every key the sample shows inside a section is in the live section (the sample may leave
  some out), but for ``gc``, whose keys are the interpreter's (the sample is CPython's).
"""

import json
import platform

import doc_blocks
from sockjs_clients import WebSocketClient, XhrStreamingClient, wait_until

MONITORING = doc_blocks.page("monitoring")
TOKEN = "t"
PYPY = platform.python_implementation() == "PyPy"
# Top-level keys only PyPy has, and sections whose keys differ by interpreter.
PYPY_ONLY = {"jit"}
BY_INTERPRETER = {"gc"}


def documented():
    return json.loads(doc_blocks.named_block(MONITORING, "stats-sample"))


def test_the_sample_is_json_of_a_broker_in_the_pages_mode():
    sample = documented()
    assert {"backplane", "max_connection_age", "audience"} <= set(sample)
    assert sample["connections"] == {"websocket": 1, "xhr_streaming": 1}
    assert not PYPY_ONLY & set(sample)


def test_the_sample_has_the_live_answers_sections_and_their_keys(start_redis, start_broker):
    broker = start_broker("--redis", start_redis().url, "--publish-token", TOKEN, "--announce-audience", "5",
                          "--max-connection-age", "3600")
    websocket = WebSocketClient(broker.url).open()
    streaming = XhrStreamingClient(broker.url).open()
    websocket.send("from a client")
    assert broker.request("POST", "/publish", b"from a backend", {"Authorization": "Bearer " + TOKEN})[0] == 200
    wait_until(lambda: broker.stats()["audience"]["room"] == 2 and broker.stats()["messages_out"] == 4, timeout=20)
    live = broker.stats()
    websocket.close()
    streaming.close()

    sample = documented()
    expected = set(sample) | (PYPY_ONLY if PYPY else set())
    assert set(live) == expected, "only in the live answer: %s; only in the sample: %s" % (
        sorted(set(live) - expected), sorted(expected - set(live)))
    missing = ["%s.%s" % (section, key) for section, shown in sample.items() if isinstance(shown, dict)
               and not (PYPY and section in BY_INTERPRETER) for key in shown if key not in live[section]]
    assert not missing, "the sample shows keys the live answer does not have: %s" % missing
