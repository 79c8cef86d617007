"""Rooms' names and bounds: a bad name, too many rooms for a session or for the broker, or a
broker of none, each refused clearly (a close code, 400, 429); a room forgotten once empty and
idle is a new history."""

import pytest

from broker.protocol.close_codes import ROOM_REFUSED, TOO_MANY_ROOMS
from sockjs_clients import ALL, WebSocketClient, closed_with, wait_until
from test_flag_ranges import refused_at_start

AUTH = {"Authorization": "Bearer t"}


def test_a_bad_room_name_closes_the_session_as_it_opens_on_every_transport(start_broker):
    broker = start_broker()
    for transport in ALL:
        assert closed_with(transport(broker.url, query="rooms=a%20b").open()) == ROOM_REFUSED, transport.transport
    stats = broker.stats()
    assert (stats["rooms"], stats["connections_total"]) == (0, 0)


@pytest.mark.parametrize("query", ["rooms=", "rooms=a,,b", "rooms=" + "x" * 65, "rooms=a,b,c", "rooms=caf%C3%A9"])
def test_no_room_a_bad_one_or_more_than_a_session_may_join_is_refused(start_broker, query):
    broker = start_broker("--max-session-rooms", "2")
    assert closed_with(WebSocketClient(broker.url, query=query)) == ROOM_REFUSED
    with WebSocketClient(broker.url, query="rooms=a,b,a"):
        wait_until(lambda: broker.stats()["connections_total"] == 2)
    assert broker.stats()["rooms"] == 2


def test_past_max_rooms_a_new_room_is_refused_an_old_one_still_served(start_broker):
    broker = start_broker("--max-rooms", "1", "--publish-token", "t")
    assert closed_with(WebSocketClient(broker.url, query="rooms=b,c")) == TOO_MANY_ROOMS
    assert broker.stats()["rooms"] == 0, "a session refused makes none of its rooms"
    with WebSocketClient(broker.url, query="rooms=a") as a:
        assert closed_with(WebSocketClient(broker.url, query="rooms=b")) == TOO_MANY_ROOMS
        assert closed_with(WebSocketClient(broker.url, query="rooms=a,b")) == TOO_MANY_ROOMS
        status, answer = broker.request("POST", "/publish?room=c", b"x", AUTH)
        assert (status, answer) == (429, {"error": "room c not made: the broker holds 1 rooms (--max-rooms)"})
        assert broker.request("POST", "/publish?room=a", b"in a", AUTH)[0] == 200
        assert broker.request("POST", "/publish", b"in the default room", AUTH)[0] == 200
        assert a.receive() == ["in a"]
    stats = broker.stats()
    assert (stats["rooms"], stats["rooms_created"], stats["rooms_refused"]) == (1, 1, 4)


def test_a_broker_of_no_named_room_refuses_them_for_good_and_serves_the_default_room(start_broker):
    """--max-rooms 0: a session naming rooms is refused as a bad URL is (3013: do not come back),
    not as a full broker (3014: come back later), and a publish naming one answers 400."""
    broker = start_broker("--max-rooms", "0", "--publish-token", "t")
    with WebSocketClient(broker.url) as viewer:
        assert closed_with(WebSocketClient(broker.url, query="rooms=a")) == ROOM_REFUSED
        status, answer = broker.request("POST", "/publish?room=a", b"x", AUTH)
        assert (status, answer) == (400, {"error": "room a not made: this broker serves the default room only "
                                                   "(--max-rooms 0)"})
        assert broker.request("POST", "/publish", b"in the default room", AUTH)[0] == 200
        assert viewer.receive() == ["in the default room"]
    stats = broker.stats()
    assert (stats["rooms"], stats["rooms_created"], stats["rooms_refused"]) == (0, 0, 2)


@pytest.mark.parametrize("room", ["a%20b", "", "x" * 65, "a&room=b"])
def test_a_publish_naming_a_bad_room_or_two_is_refused_with_the_rule(start_broker, room):
    broker = start_broker("--publish-token", "t")
    status, answer = broker.request("POST", "/publish?room=" + room, b"x", AUTH)
    assert status == 400 and ("1 to 64 characters of A-Z a-z 0-9 _ - . :" in answer["error"]
                              or "given 2 times: name one room" in answer["error"]), answer
    assert broker.stats()["messages_in"] == 0


def test_a_room_empty_and_idle_past_its_history_is_forgotten_and_made_again_anew(start_broker):
    broker = start_broker("--publish-token", "t", "--history-seconds", "0.5")
    with WebSocketClient(broker.url, query="rooms=a&positions=1") as a:
        epoch = a.receive()[0]["epoch"]
        assert broker.request("POST", "/publish?room=a", b"x", AUTH)[0] == 200
        assert a.receive() == [{"o": "1", "d": "x"}]
    assert broker.stats()["rooms"] == 1
    wait_until(lambda: broker.stats()["rooms"] == 0)
    assert broker.stats()["rooms_forgotten"] == 1
    with WebSocketClient(broker.url, query="rooms=a&positions=1&epoch=%s&since=1" % epoch) as again:
        gap = again.receive()[0]
        assert (gap["c"], gap["reason"]) == ("gap", "epoch") and gap["epoch"] != epoch
    assert broker.stats()["rooms_created"] == 2


@pytest.mark.parametrize("flag, value", [("--max-rooms", "-1"), ("--max-rooms", "1000001"),
                                         ("--max-session-rooms", "0"), ("--max-session-rooms", "1001")])
def test_the_rooms_bounds_are_checked_at_start(flag, value):
    line = refused_at_start("broker", [flag, value])
    assert line.startswith("python -m broker: error: argument %s: " % flag), line
