"""broker-client.js reacts to the broker's close codes by their numbers in
``broker/protocol/close_codes.py``: a code changed on one side only fails here.

* Every close code the client names, in its code (``var NAME = 3012;``, ``var NAME = [1003, ...];``)
  and in its comments, is one of close_codes.py's, or its own (:data:`CLIENT_OWN`, a code of
  the private range 4000-4999 it closes a silent connection with, which the broker never sends).
* What the client does with each close of close_codes.py is said here once (:data:`REACTIONS`),
  from the table at the top of that module: ``reconnect now`` (3012, "reconnect now, to any
  broker"), ``stop`` (the same client would be refused again), ``fresh token`` (3017, "come back
  with a fresh token, or stop"), ``back off`` (the rest: come back after a pause, with jitter).
  A close added to close_codes.py fails here until it has one.
* The client's reconnect-now code is the ``reconnect now`` close's, its token-expired code the
  ``fresh token`` close's, and its stop codes are
  exactly the ``stop`` closes' codes; no code the client stops on is one the broker also sends
  for a close that should come back (1002 is both a protocol error and SockJS's interrupted
  stream: the client cannot stop on it).
"""

import os
import re

import documentation
from checkout import ROOT

CLIENT = os.path.join(ROOT, "broker", "ops", "demo", "broker-client.js")
CLIENT_OWN = {"SILENT": 4000}
RECONNECT_NOW, STOP, FRESH_TOKEN, BACK_OFF = "reconnect now", "stop", "fresh token", "back off"
REACTIONS = {
    "PING_TIMEOUT": BACK_OFF, "PROTOCOL_ERROR": BACK_OFF, "INTERRUPTED": BACK_OFF,
    "BINARY_FRAME": STOP, "INVALID_UTF8": STOP, "INVALID_MESSAGE": STOP, "NOT_A_STRING": STOP,
    "BROKER_SHAPE": STOP, "MESSAGE_TOO_BIG": STOP,
    "SLOW_CONSUMER": BACK_OFF, "TOO_MANY_MESSAGES": BACK_OFF, "SESSIONS_PER_IP": BACK_OFF,
    "MAX_SESSIONS": BACK_OFF, "RECONNECT": RECONNECT_NOW, "ROOM_REFUSED": STOP, "TOO_MANY_ROOMS": BACK_OFF,
    "TOKEN_REQUIRED": STOP, "TOKEN_REFUSED": STOP, "TOKEN_EXPIRED": FRESH_TOKEN,
}
# The client's constants that hold close codes, each with the reaction it stands for.
CLIENT_CONSTANTS = {"RECONNECT_NOW": RECONNECT_NOW, "STOP_CODES": STOP, "TOKEN_EXPIRED": FRESH_TOKEN}
CONSTANT = re.compile(r"^\s*var ([A-Z_]+) = (\[[0-9, ]*\]|[0-9]+);", re.MULTILINE)
# A close code as the client's text may write one: RFC 6455's, or the 3000-4999 ranges.
CODE = re.compile(r"\b(10(?:0[0-9]|1[0-5])|[34][0-9]{3})\b")


def client_text():
    with open(CLIENT, encoding="utf-8") as f:
        return f.read()


def client_constants(text):
    """``{name: [codes]}`` of every numeric constant of the client."""
    return {name: [int(number) for number in re.findall(r"[0-9]+", value)]
            for name, value in CONSTANT.findall(text)}


def test_every_close_of_the_broker_has_a_reaction_here():
    assert set(documentation.closes()) == set(REACTIONS), set(documentation.closes()) ^ set(REACTIONS)


def test_the_clients_close_codes_are_the_brokers():
    text = client_text()
    constants = client_constants(text)
    codes = documentation.closes()
    for constant, reaction in CLIENT_CONSTANTS.items():
        wanted = sorted({codes[name] for name, said in REACTIONS.items() if said == reaction})
        assert sorted(set(constants[constant])) == wanted, (constant, constants[constant], wanted)
    stopped = set(constants["STOP_CODES"])
    coming_back = {codes[name] for name, said in REACTIONS.items() if said != STOP}
    assert not stopped & coming_back, "the client stops on a code the broker also sends to come back"
    for name, code in CLIENT_OWN.items():
        assert constants[name] == [code] and 4000 <= code <= 4999 and code not in codes.values()


def test_every_close_code_the_client_names_is_the_brokers_or_its_own():
    known = set(documentation.closes().values()) | set(CLIENT_OWN.values())
    unknown = ["line %d: %s" % (client_text().count("\n", 0, match.start()) + 1, match.group(0))
               for match in CODE.finditer(client_text()) if int(match.group(0)) not in known]
    assert not unknown, "broker-client.js names close codes close_codes.py does not have:\n" + "\n".join(unknown)
