"""Debian's redis-server as the tests and the cluster benchmarks start it (:mod:`loadtest.contenders.redis_server`)."""

from loadtest.contenders import redis_server


def test_redis_starts_on_a_fresh_port_when_the_one_picked_is_taken_before_it_binds(redis_installed,
                                                                                     port_taken_first):
    taken = port_taken_first(redis_server)
    redis = redis_server.RedisServer()
    try:
        assert redis.port != taken
        assert redis.url == "redis://127.0.0.1:%d/0" % redis.port
        assert redis.answers()
        redis.kill()
        redis.start()  # a restart keeps its port
        assert redis.answers()
    finally:
        redis.stop()
