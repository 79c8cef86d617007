"""A cluster serves the default room only, for now: a named room is refused clearly, a session
with 3013, a publish with 400 saying why, and the default room works as ever. (Named rooms
through Redis replace this refusal: ``broker.app.room_maker``.)"""

from broker.app import CLUSTER_ROOMS
from broker.protocol.close_codes import ROOM_REFUSED
from sockjs_clients import WebSocketClient, closed_with

AUTH = {"Authorization": "Bearer t"}


def test_a_cluster_refuses_named_rooms_and_serves_the_default_room(start_redis, start_broker):
    broker = start_broker("--redis", start_redis().url, "--publish-token", "t")
    assert closed_with(WebSocketClient(broker.url, query="rooms=a")) == ROOM_REFUSED
    status, answer = broker.request("POST", "/publish?room=a", b"x", AUTH)
    assert (status, answer) == (400, {"error": "room a: " + CLUSTER_ROOMS})
    with WebSocketClient(broker.url) as default:
        assert broker.request("POST", "/publish", b"y", AUTH)[0] == 200
        assert default.receive() == ["y"]
    stats = broker.stats()
    assert (stats["rooms"], stats["rooms_refused"], stats["messages_in"]) == (0, 2, 1)
