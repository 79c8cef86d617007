"""Counters a room may hold, within --max-buffer: at the longest names and totals, every
counter's latest message fits a first batch with room to spare, so a viewer that opens is
never cut by the first message after it; a counter past that is refused, changing nothing."""

from longest_counters import add_counters, counter_path, longest_name
from sockjs_clients import XhrPollingClient

AUTH = {"Authorization": "Bearer t"}


def test_a_viewer_of_every_counter_the_room_takes_is_not_cut_by_the_next_message(start_broker):
    broker = start_broker("--publish-token", "t", "--max-buffer", "64KiB")
    taken, refusal = add_counters(broker, 1000, AUTH)
    assert len(broker.stats()["counters"]) == taken
    with XhrPollingClient(broker.url, query="positions=1") as viewer:
        assert broker.request("POST", "/publish", b"the next message", AUTH)[0] == 200
        received = viewer.collect(1 + taken + 1)  # its start, every counter, the message
    assert received[-1]["d"] == "the next message"
    assert broker.stats()["slow_consumer_disconnects"] == 0
    assert refusal is not None and refusal[0] == 400, refusal
    assert "the room has %d counters already" % taken in refusal[1] and "--max-buffer" in refusal[1], refusal


def test_a_larger_buffer_takes_more_counters_up_to_the_most(start_broker):
    small = start_broker("--publish-token", "t", "--max-buffer", "8KiB")
    taken, refusal = add_counters(small, 40, AUTH)
    assert refusal is not None and 0 < taken < 40, (taken, refusal)
    assert "the room has %d counters already" % taken in refusal[1]
    assert small.request("POST", counter_path(longest_name(0)), b"1", AUTH)[0] == 200, \
        "a counter the room holds still takes amounts"
    assert len(small.stats()["counters"]) == taken
    large = start_broker("--publish-token", "t", "--max-buffer", "16KiB")
    assert add_counters(large, 40, AUTH)[0] >= 2 * taken
