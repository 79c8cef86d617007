"""Debian's redis-server as the tests and the cluster benchmarks start it (:mod:`loadtest.contenders.redis_server`)."""

import socket

from loadtest.contenders import child_process, redis_server


def test_redis_starts_on_a_fresh_port_when_the_one_picked_is_taken_before_it_binds(redis_installed, monkeypatch):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        # The first port picked is one another process has bound since it was found free.
        picks = iter([taken.getsockname()[1]])
        monkeypatch.setattr(redis_server, "free_port", lambda: next(picks, None) or child_process.free_port())
        redis = redis_server.RedisServer()
        try:
            assert redis.port != taken.getsockname()[1]
            assert redis.url == "redis://127.0.0.1:%d/0" % redis.port
            assert redis.answers()
            redis.kill()
            redis.start()  # a restart keeps its port
            assert redis.answers()
        finally:
            redis.stop()
