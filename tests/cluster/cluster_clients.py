"""Publishing to and reading from the brokers of a test cluster, and its Redis filled."""

import time

import redis

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


def full_redis(server, spare):
    """A client of ``server`` (a real redis-server), which refuses writes (``noeviction``) once it
    holds ``spare`` bytes more than now. Its slowlog is off: on a loaded machine it keeps the
    arguments of 128 commands slower than 10 ms, up to half a MB that no broker could give back."""
    store = redis.Redis.from_url(server.url)
    store.config_set("slowlog-max-len", 0)
    store.slowlog_reset()
    store.config_set("maxmemory-policy", "noeviction")
    store.config_set("maxmemory", store.info("memory")["used_memory"] + spare)
    return store


def refusing_redis(server):
    """A client of ``server``, which another key has filled past its ``maxmemory``: it refuses
    every write (``noeviction``) until that key is deleted (``someone-else``)."""
    store = redis.Redis.from_url(server.url)
    store.set("someone-else", b"x" * (8 * 1024 * 1024))
    store.config_set("maxmemory-policy", "noeviction")
    store.config_set("maxmemory", store.info("memory")["used_memory"] - 1024 * 1024)
    return store
