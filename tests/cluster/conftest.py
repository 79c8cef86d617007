"""Brokers joined through a real redis-server (``start_redis`` in tests/conftest.py)."""

import pytest

from cluster_clients import TOKEN


@pytest.fixture
def start_cluster(start_broker):
    """``start(redis, n, *flags)``: n brokers on ``redis``, publish token ``t``, no client rate limit."""

    def start(redis, n, *flags):
        return [start_broker("--redis", redis.url, "--publish-token", TOKEN, "--client-rate", "0", *flags)
                for _ in range(n)]

    return start
