import json

from loadtest.framing import payload


def sockjs_frame(*messages):
    return b"a[" + b",".join(b'"' + m + b'"' for m in messages) + b"]"


def test_messages_are_counted_without_decoding():
    frame = b"xx" + sockjs_frame(*(payload.message(i, 1, 100) for i in range(7))) + b"yy"
    assert payload.count_sockjs_messages(frame, 2, len(frame) - 2) == 7


def test_own_messages_are_found_and_other_ids_do_not_match():
    frame = sockjs_frame(
        payload.message(13, 1, 1000), payload.message(3, 7, 2000),
        payload.message(33, 2, 3000), payload.message(3, 8, 4000),
    )
    marker = payload.sockjs_marker(3)
    assert payload.own_messages(frame, marker, 0, len(frame)) == [(7, 2000), (8, 4000)]
    assert payload.own_messages(frame, payload.sockjs_marker(4), 0, len(frame)) == []


def test_raw_messages_match_only_at_the_start():
    data = b"??" + payload.message(13, 5, 77)
    assert payload.own_raw_message(data, payload.raw_marker(3), 2, len(data)) is None
    assert payload.own_raw_message(data, payload.raw_marker(13), 2, len(data)) == (5, 77)


def test_send_payload_is_a_sockjs_json_array():
    assert payload.sockjs_send_payload(b"1:2:3") == b'["1:2:3"]'


def test_a_token_message_goes_in_a_send_array_as_the_object_a_broker_reads():
    sent = json.loads(payload.sockjs_send_payload(payload.token_message("eyJh.eyJz.c2ln-_")))
    assert sent == ['{"token":"eyJh.eyJz.c2ln-_"}'], "no space: a broker reads a message beginning {\"token\":"
