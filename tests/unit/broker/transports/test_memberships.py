"""A connection in several rooms without sockets: one membership a room, each key its room's,
every room left as it closes, nothing left behind."""

import gc
import platform
import types
import weakref

import pytest

from broker.core.hub import Hub
from broker.core.node import ClientRules, Node
from broker.core.rooms import Rooms
from broker.protocol.batch import InRoom, Positioned
from broker.transports.subscriber import BroadcastConnection, Membership


def connection_in(rooms, query, transport="xhr_streaming"):
    """A polling or streaming connection of a router whose node holds ``rooms``, opened with ``query``."""
    server = types.SimpleNamespace(node=Node(hub=rooms.default, rooms=rooms), rules=ClientRules(max_session_rooms=3))
    session = types.SimpleNamespace(server=server, handler=types.SimpleNamespace(), transport_name=transport,
                                    is_closed=False, write_batch=lambda batch, key: True,
                                    close=lambda code, reason: setattr(session, "closed", (code, reason)))
    connection = BroadcastConnection(session)
    connection.on_open(types.SimpleNamespace(arguments=query))
    return connection


def rooms():
    return Rooms(Hub(lambda flush: None), lambda name: Hub(lambda flush: None), 10, 60.0)


def test_a_connection_of_several_rooms_is_in_each_in_its_tagged_form_and_leaves_them_all():
    held = rooms()
    connection = connection_in(held, {"rooms": [b"a,b"], "positions": [b"1"]})
    a, b = held.get("a"), held.get("b")
    assert [m.form for m in connection.memberships] == [Positioned(InRoom("a", None)), Positioned(InRoom("b", None))]
    assert (len(a), len(b), len(held.default)) == (1, 1, 0)
    assert held.connections() == [connection]
    connection.on_message("hi")
    assert held.multiplexed_dropped == 1 and a.messages_in == b.messages_in == 0
    connection.on_close()
    assert (len(a), len(b), a.by_transport["xhr_streaming"]) == (0, 0, 0)


def test_a_connection_of_one_room_is_that_room_s_subscriber_in_today_s_forms():
    held = rooms()
    connection = connection_in(held, {"rooms": [b"a"]})
    assert connection.hub is held.get("a") and connection.form is None and not connection.memberships
    connection.on_message("hi")
    assert held.get("a").messages_in == 1 and held.default.messages_in == 0


def test_a_refused_name_closes_the_session_and_joins_nothing():
    held = rooms()
    connection = connection_in(held, {"rooms": [b"a,b,c,d"]})
    assert connection.session.closed[0] == 3013 and len(held) == 0 and connection.hub is None


def test_a_membership_keeps_each_conflating_key_its_room_s():
    written = []
    through = types.SimpleNamespace(write_batch=lambda data, key: written.append(key) or True)
    connection = types.SimpleNamespace(wrapped=lambda inner, room: InRoom(room, inner), writer=through,
                                       transport="websocket")
    membership = Membership(connection, types.SimpleNamespace(name="a"), None)
    assert membership.writer is membership
    assert membership.write_batch(b"x", "raised") and membership.write_batch(b"y", None)
    assert written == ["a raised", None]


@pytest.mark.skipif(platform.python_implementation() != "CPython", reason="reference counting is CPython's")
def test_a_closed_connection_of_several_rooms_goes_with_its_last_reference():
    held = rooms()
    connection = connection_in(held, {"rooms": [b"a,b"]})
    connection.on_close()
    gone = weakref.ref(connection)
    enabled = gc.isenabled()
    gc.disable()
    try:
        del connection
        assert gone() is None, "a closed connection is held by a reference cycle"
    finally:
        if enabled:
            gc.enable()
