"""A session's queue between requests: the room's batches in one ``a[...]`` frame, bounded, one per key."""

import types

from broker.core.node import ClientRules
from broker.protocol.batch import Batch
from broker.transports.router import BrokerRouter
from broker.transports.subscriber import BroadcastConnection


def session_of(max_buffer=1024):
    router = BrokerRouter(BroadcastConnection, "/x", rules=ClientRules(max_buffer=max_buffer))
    return router.create_session("s1", register=False)


def request(session):
    """A poll's handler attached to ``session``, waiting for a frame; what it is sent."""
    sent = []
    handler = types.SimpleNamespace(name="xhr", active=True, get_conn_info=lambda: None, send_pack=sent.append)
    session.handler = handler
    return sent


def test_a_waiting_request_takes_the_batch_frame_built_for_all():
    session = session_of()
    sent = request(session)
    batch = Batch(['"a"', '"b"'])
    assert session.write_batch(batch, None)
    assert sent == ['a["a","b"]'] and sent[0] is batch.sockjs_frame


def test_batches_without_a_request_go_out_in_one_frame_to_the_next():
    session = session_of()
    assert session.write_batch(Batch(['"a"', '"b"']), None)
    assert session.write_batch(Batch(['"c"']), None)
    session.send_jsonified('"own"')
    sent = request(session)
    session.flush()
    assert sent == ['a["a","b","c","own"]']
    session.flush()
    assert len(sent) == 1


def test_a_keyed_batch_replaces_the_one_queued_under_its_key():
    session = session_of()
    for encoded, key in (('"t1"', "total"), ('"a"', None), ('"t2"', "total")):
        assert session.write_batch(Batch([encoded]), key)
    sent = request(session)
    session.flush()
    assert sent == ['a["a","t2"]']


def test_a_queue_over_max_buffer_refuses_the_room_batches_not_the_session_frames():
    session = session_of(max_buffer=4)
    assert session.write_batch(Batch(['"long"']), None)
    assert not session.write_batch(Batch(['"x"']), None)
    assert session.write_batch(Batch(['"t"']), "total")  # a key is held to twice the bound
    session.send_jsonified('"own"')
    sent = request(session)
    session.flush()
    assert sent == ['a["long","t","own"]']
