"""Every flag is checked at start against the range where the broker works: a value outside
it stops ``python -m broker`` (and ``python -m broker.conformance``) before anything runs,
with argparse's one-line error naming the flag and exit status 2, never a traceback, whether
it was typed or came from its variable. The bounds themselves start a broker that works."""

import os
import subprocess
import sys

import pytest

from sockjs_clients import WebSocketClient

RUN_TIMEOUT_S = 30


def refused_at_start(module, argv, environ=None):
    """The error line of ``python -m module argv`` (with ``environ`` added to the
    environment); it must exit 2 with that line last, and print no traceback."""
    environment = {name: value for name, value in os.environ.items() if not name.startswith("BROKER_")}
    done = subprocess.run([sys.executable, "-m", module, "--port", "0"] + list(argv), capture_output=True,
                          text=True, timeout=RUN_TIMEOUT_S, env=dict(environment, **(environ or {})))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if ": error: " in line]
    assert len(errors) == 1 and done.stderr.splitlines()[-1] == errors[0], done.stderr
    assert done.stdout == "", "started: " + done.stdout
    return errors[0]


@pytest.mark.parametrize("flag, value", [
    ("--idempotency-window", "1e17"),  # past Redis's expiry: a cluster answered 503 and published twice
    ("--idempotency-window", "1e306"),  # overflowed the Redis writer: its publishers never got an answer
    ("--max-connection-age", "1.797e308"),  # raised in session open, sessions left half-open
    ("--client-rate", "0.4"),  # a burst under one message: every client's first message refused
    ("--client-rate", "-1"),
    ("--port", "70000"),
    ("--port", "-1"),
    ("--drain-seconds", "nan"),
    ("--drain-seconds", "-1"),
    ("--heartbeat-delay", "inf"),
    ("--heartbeat-delay", "0"),
    ("--write-timeout", "0"),
    ("--ws-ping-interval", "1e308"),
    ("--disconnect-delay", "1e400"),
    ("--history-seconds", "nan"),
    ("--announce-audience", "-0.5"),
    ("--max-accept-rate", "inf"),
    ("--max-buffer", "0"),
    ("--send-buffer", "3000MiB"),  # past what the socket option takes: raised as each connection opened
    ("--max-message-size", "0"),
    ("--max-connections", "0"),
    ("--max-connections-per-ip", "-3"),
    ("--history", "1e3"),
    ("--replay", "99999999999"),
    ("--warm-up-sessions", "-1"),
    ("--log-level", "verbose"),
    ("--publish-token", "three are many"),  # one, or two while rotating
    ("--redis", "redis://127.0.0.1:99999/0"),
])
def test_a_value_outside_the_range_stops_the_broker_at_start_naming_the_flag(flag, value):
    line = refused_at_start("broker", [flag, value])
    assert line.startswith("python -m broker: error: argument %s: " % flag), line


@pytest.mark.parametrize("variable, value, flag", [
    ("BROKER_LOG_LEVEL", "verbose", "--log-level"),  # passed the parser, then a traceback at start
    ("BROKER_CLIENT_RATE", "0.4", "--client-rate"),
    ("BROKER_IDEMPOTENCY_WINDOW", "1e17", "--idempotency-window"),
])
def test_a_variable_is_checked_as_its_flag_is(variable, value, flag):
    line = refused_at_start("broker", [], {variable: value})
    assert line.startswith("python -m broker: error: argument %s: " % flag), line


def test_the_conformance_services_check_their_port_too():
    line = refused_at_start("broker.conformance", ["--port", "70000"])
    assert line.startswith("python -m broker.conformance: error: argument --port: "), line


def test_the_bounds_start_a_broker_that_works(start_broker):
    """The least client rate whose burst holds a message, and the longest windows and ages:
    a client's first message goes through, and a session opens and is counted."""
    broker = start_broker("--client-rate", "0.5", "--idempotency-window", "86400",
                          "--max-connection-age", "2592000", "--history-seconds", "2592000",
                          "--send-buffer", "64MiB", "--max-buffer", "1KiB", "--heartbeat-delay", "3600",
                          "--max-accept-rate", "1000000", "--replay", "1000000")
    with WebSocketClient(broker.url) as client:
        client.send("first")
        assert client.receive() == ["first"]
    assert broker.stats()["max_connection_age"]["seconds"] == 2592000
