"""sockjs-client in Chromium through deploy/haproxy.cfg, in front of two brokers
that share the room through Redis: a line one browser sends reaches the other,
whichever broker each is held by."""

import pytest

from test_transports import TRANSPORTS


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_every_transport_works_through_haproxy(start_redis, start_cluster, browser_script, transport):
    redis = start_redis()
    cluster = start_cluster(2, "--redis", redis.url)
    result = browser_script("transport.js", cluster.origin, transport)
    assert result["used"] == [transport, transport]
    assert sum(broker.stats()["messages_in"] for broker in cluster.brokers) == 2
    assert all(broker.stats()["backplane"]["delivered"] == 2 for broker in cluster.brokers)
