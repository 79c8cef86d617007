"""A live room for tests that stop, kill and restart brokers under it: numbered
messages published at a steady rate."""

import threading
import time


class Publisher(threading.Thread):
    """Publishes "0", "1", ... at ``rate`` a second, each with its number as its
    Idempotency-Key, with the publish ``token``, to ``targets`` (brokers, or a
    cluster's proxy: anything with ``request``) in turn, ``limit`` at the most;
    a request that fails is retried on the next target until it is answered 200.
    ``publish(message)`` does the same for one message, from the test's thread."""

    def __init__(self, targets, rate, token, limit=2000):
        super().__init__(daemon=True)
        self.targets = targets
        self.rate = rate
        self.token = token
        self.limit = limit
        self.sent = 0
        self.retries = 0
        self.stopping = threading.Event()

    def publish(self, message, deadline_s=30.0):
        deadline = time.monotonic() + deadline_s
        headers = {"Authorization": "Bearer " + self.token, "Idempotency-Key": message}
        turn = self.sent
        while True:
            target = self.targets[turn % len(self.targets)]
            try:
                if target.request("POST", "/publish", message.encode(), headers)[0] == 200:
                    return
            except OSError:
                pass
            assert time.monotonic() < deadline, "no broker took %r" % message
            self.retries += 1
            turn += 1
            time.sleep(0.05)

    def run(self):
        start = time.monotonic()
        while not self.stopping.is_set() and self.sent < self.limit:
            self.publish(str(self.sent))
            self.sent += 1
            self.stopping.wait(max(0.0, start + self.sent / self.rate - time.monotonic()))

    def stop(self):
        """Publish no more; returns how many were published, every one answered 200."""
        self.stopping.set()
        self.join(35)
        assert not self.is_alive(), "the publisher is stuck"
        return self.sent
