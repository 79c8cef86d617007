"""broker-client.js's silence bound is the one the protocol page states, derived from the
broker's heartbeat: its default heartbeat (``HEARTBEAT_MS``) is ``--heartbeat-delay``'s
default, and the page says the bound is the heartbeat plus ``LATE_HEARTBEAT_MS``, and what that
comes to at the default. A default changed on one side only fails here."""

import os
import re

import doc_blocks
from broker.config import DEFAULTS
from checkout import ROOT

CLIENT = os.path.join(ROOT, "broker", "ops", "demo", "broker-client.js")
PROTOCOL = doc_blocks.page("protocol")


def client_constant(name):
    with open(CLIENT, encoding="utf-8") as f:
        found = re.findall(r"^\s*var %s = ([0-9]+);" % name, f.read(), re.MULTILINE)
    assert len(found) == 1, (name, found)
    return int(found[0])


def protocol_text():
    with open(PROTOCOL, encoding="utf-8") as f:
        return " ".join(f.read().split())


def test_the_clients_default_heartbeat_is_the_brokers():
    assert client_constant("HEARTBEAT_MS") == DEFAULTS.heartbeat_delay * 1000


def test_the_protocol_page_states_the_clients_silence_bound():
    late_s = client_constant("LATE_HEARTBEAT_MS") / 1000
    text = protocol_text()
    assert "takes **the heartbeat plus %g s** of silence, %g s at the default ``--heartbeat-delay``" % (
        late_s, DEFAULTS.heartbeat_delay + late_s) in text
