"""The named rooms' histories together under --max-rooms-history, in a running broker: past it
the largest forget their oldest messages, counted in /stats; a client resuming in that room
past them is told a gap, one resuming after them gets the rest; the other rooms, and the
default room whatever it holds, keep every message."""

import pytest

from sockjs_clients import WebSocketClient, wait_until
from test_flag_ranges import refused_at_start

AUTH = {"Authorization": "Bearer t"}
TEXT = "x" * 1000
# A message's JSON text: the string and its two quotes.
MESSAGE_BYTES = len(TEXT) + 2


def publish(broker, query, count):
    """Publish ``count`` messages of TEXT over POST /publish; the last one's position."""
    for _ in range(count):
        status, answer = broker.request("POST", "/publish?" + query, TEXT.encode(), AUTH)
        assert status == 200, answer
    return answer["position"]


def resume(broker, query, epoch, since, count):
    """What a client resuming after ``since`` in ``epoch`` is given first: its lead and ``count`` messages."""
    with WebSocketClient(broker.url, query="%s&positions=1&epoch=%s&since=%s" % (query, epoch, since)) as client:
        return client.collect(1 + count)


def test_past_the_bound_the_largest_room_forgets_its_oldest_and_a_resume_past_them_is_a_gap(start_broker):
    broker = start_broker("--publish-token", "t", "--max-rooms-history", "64KiB")
    default = publish(broker, "", 100)
    c = publish(broker, "room=c", 5)
    b = publish(broker, "room=b", 30)
    with WebSocketClient(broker.url, query="rooms=a&positions=1") as chatting:
        epoch_a = chatting.receive()[0]["epoch"]
        chatting.send(*[TEXT] * 40)
        assert len(chatting.collect(40)) == 40
    # 75 messages in the named rooms, 75,150 bytes: a, the largest, is cut to b's 30 (65,130 bytes).
    wait_until(lambda: broker.stats()["rooms_history_trimmed"] == 10, timeout=30)
    stats = broker.stats()
    assert stats["rooms_history_trimmed_bytes"] == 10 * MESSAGE_BYTES
    assert stats["rooms_history_bytes"] == 65 * MESSAGE_BYTES <= 64 * 1024
    gap = resume(broker, "rooms=a", epoch_a, "9", 0)[0]
    assert (gap["c"], gap["reason"], gap["o"]) == ("gap", "expired", "40")
    resumed = resume(broker, "rooms=a", epoch_a, "10", 30)
    assert resumed[0] == {"c": "resumed", "epoch": epoch_a, "o": "40"}
    assert [message["o"] for message in resumed[1:]] == [str(offset) for offset in range(11, 41)]
    for query, position, count in (("rooms=b", b, 30), ("rooms=c", c, 5), ("", default, 100)):
        kept = resume(broker, query, position["epoch"], "0", count)
        assert kept[0]["c"] == "resumed" and [message["o"] for message in kept[1:]] == [
            str(offset) for offset in range(1, count + 1)], query
    assert broker.stats()["rooms_history_trimmed"] == 10, "under the bound: nothing more forgotten"


@pytest.mark.parametrize("value", ["1023", "1025GiB", "-1", "0"])
def test_the_bound_is_checked_at_start(value):
    line = refused_at_start("broker", ["--max-rooms-history", value])
    assert line.startswith("python -m broker: error: argument --max-rooms-history: "), line
