"""Publishing to and reading from the brokers of a test cluster."""

import time

TOKEN = "t"
AUTH = {"Authorization": "Bearer " + TOKEN}


def publish(broker, message):
    """POST ``message`` (a string) to ``broker``: (status, answer)."""
    return broker.request("POST", "/publish", message.encode(), AUTH)


def receive_until(client, last, timeout=20.0):
    """Every message ``client`` receives, up to and including ``last``."""
    received = []
    deadline = time.monotonic() + timeout
    while last not in received:
        assert time.monotonic() < deadline, "%s: no %r after %d messages" % (client.transport, last, len(received))
        received.extend(client.receive())
    return received
