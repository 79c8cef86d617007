"""Brokers joined through a real redis-server (``start_redis`` in tests/conftest.py)."""

import os

import pytest

from cluster_clients import TOKEN
from loadtest.contenders import redis_sentinel
from tcp_proxy import TcpProxy


@pytest.fixture
def start_cluster(start_broker):
    """``start(redis, n, *flags)``: n brokers on ``redis``, publish token ``t``, no client rate limit."""

    def start(redis, n, *flags):
        return [start_broker("--redis", redis.url, "--publish-token", TOKEN, "--client-rate", "0", *flags)
                for _ in range(n)]

    return start


@pytest.fixture
def sentinel_group(redis_installed, tmp_path):
    """A primary, two replicas and three Sentinels (:mod:`loadtest.contenders.redis_sentinel`), ready to fail over."""
    if redis_sentinel.REDIS_SENTINEL is None:
        if os.environ.get("CI"):
            pytest.fail(redis_sentinel.HOWTO, pytrace=False)
        pytest.skip(redis_sentinel.HOWTO)
    group = redis_sentinel.SentinelGroup(tmp_path)
    try:
        group.wait_ready()
        yield group
    finally:
        group.stop()


@pytest.fixture
def proxied_pair(start_redis, start_cluster):
    """Two brokers on one real Redis, the second through a :class:`tcp_proxy.TcpProxy` the test
    cuts and heals: ``(publisher, proxied, proxy)``."""
    redis = start_redis()
    proxy = TcpProxy(redis.port)
    try:
        publisher, = start_cluster(redis, 1)
        proxied, = start_cluster(proxy, 1)
        yield publisher, proxied, proxy
    finally:
        proxy.close()
