"""A cluster's stream keeps no entry over --max-message-size, counted as the bytes Redis holds:
a message's JSON text with SockJS's escapes (12 bytes an emoji), not the characters sent, so
that the stream's worst case is STREAM_MAXLEN times the limit (docs/sizing.rst)."""

import json

import pytest
import redis

from sockjs_clients import Closed, WebSocketClient

from cluster_clients import publish

MAX = 4096
EMOJI = "\U0001f600"


def test_no_entry_in_the_stream_is_over_the_limit_as_redis_holds_it(start_redis, start_cluster):
    server = start_redis()
    broker, = start_cluster(server, 1, "--max-message-size", str(MAX))
    store = redis.Redis.from_url(server.url)
    offender = WebSocketClient(broker.url).open()
    offender.ws.send(json.dumps([EMOJI * 1000], ensure_ascii=False))  # 4,004 bytes sent, 12,002 kept
    with pytest.raises(Closed) as closed:
        while True:
            offender.receive()
    assert closed.value.code == 1009
    assert publish(broker, EMOJI * 1000)[0] == 413
    assert publish(broker, EMOJI * 341)[0] == 200  # 4,094 bytes kept: 12 an emoji, 2 quotes
    entries = [fields[b"m"] for _, fields in store.xrange("sockjs-broker:/broadcast")]
    assert entries == [json.dumps(EMOJI * 341).encode()] and len(entries[0]) <= MAX
    store.close()
