from broker.protocol import frames
from broker.protocol.batch import RAW_WEBSOCKET, SOCKJS_WEBSOCKET, Batch, Positioned, Streamed


def test_each_form_is_built_once_and_shared():
    batch = Batch(['"hi"', "7"], None, ["1", "2"])
    forms = [None, SOCKJS_WEBSOCKET, RAW_WEBSOCKET, Streamed("xhr_streaming", True), Streamed("eventsource", False),
             Positioned(None), Positioned(SOCKJS_WEBSOCKET), Positioned(Streamed("htmlfile", True))]
    assert len(set(forms)) == len(forms)  # hashable and distinct: the room groups subscribers by form
    for form in forms:
        assert batch.form(form) is batch.form(form)
    assert batch.form(None) is batch
    assert batch.form(SOCKJS_WEBSOCKET) == frames.websocket_frame(b'a["hi",7]')
    assert batch.form(RAW_WEBSOCKET) == frames.websocket_frame(b"hi") + frames.websocket_frame(b"7")
    assert batch.form(Streamed("xhr_streaming", False)) == b'a["hi",7]\n'
    assert batch.form(Positioned(None)).encoded == ['{"o":"1","d":"hi"}', '{"o":"2","d":7}']


def test_a_picked_batch_keeps_the_messages_offsets_and_raw_texts_chosen():
    batch = Batch(['"a"', '"b"', '"c"'], [b"a", b"b", b"c"], ["1", "2", "3"])
    picked = batch.picked([0, 2])
    assert (picked.encoded, picked.raw, picked.offsets) == (['"a"', '"c"'], [b"a", b"c"], ["1", "3"])


def test_an_announcement_rides_after_the_messages_without_an_offset():
    batch = Batch(['"a"'], None, ["1"], lead='{"c":"open"}').with_announcement('{"audience":3}')
    assert batch.form(Positioned(None)).encoded == ['{"c":"open"}', '{"o":"1","d":"a"}', '{"a":{"audience":3}}']
