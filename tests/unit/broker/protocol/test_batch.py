from broker.protocol import frames
from broker.protocol.batch import RAW_WEBSOCKET, SOCKJS_WEBSOCKET, Batch, InRoom, Positioned, Streamed


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


def test_a_room_tagged_form_is_built_once_per_room_and_form_and_says_its_room():
    batch = Batch(['"hi"', "7"], None, ["1", "2"], lead='{"c":"open","epoch":"E","o":"0"}').with_announcement(
        '{"audience":3}')
    forms = [InRoom("a", None), InRoom("a", SOCKJS_WEBSOCKET), InRoom("a", RAW_WEBSOCKET),
             Positioned(InRoom("a", None)), Positioned(InRoom("a", Streamed("xhr_streaming", False)))]
    for form in forms:
        assert batch.form(form) is batch.form(form)
    assert batch.form(InRoom("a", None)).encoded == ['{"r":"a","d":"hi"}', '{"r":"a","d":7}',
                                                     '{"r":"a","d":{"audience":3}}']
    assert batch.form(InRoom("a", SOCKJS_WEBSOCKET)) == frames.websocket_frame(
        b'a[{"r":"a","d":"hi"},{"r":"a","d":7},{"r":"a","d":{"audience":3}}]')
    assert batch.form(InRoom("a", RAW_WEBSOCKET)) == b"".join(frames.websocket_frame(text) for text in (
        b'{"r":"a","d":"hi"}', b'{"r":"a","d":7}', b'{"r":"a","d":{"audience":3}}'))
    assert batch.form(Positioned(InRoom("a", None))).encoded == [
        '{"r":"a","c":"open","epoch":"E","o":"0"}', '{"r":"a","o":"1","d":"hi"}', '{"r":"a","o":"2","d":7}',
        '{"r":"a","a":{"audience":3}}']
    assert batch.form(Positioned(InRoom("a", Streamed("xhr_streaming", False)))) == (
        b'a[{"r":"a","c":"open","epoch":"E","o":"0"},{"r":"a","o":"1","d":"hi"},{"r":"a","o":"2","d":7},'
        b'{"r":"a","a":{"audience":3}}]\n')


def test_todays_forms_are_untouched_by_a_room_tagged_one():
    batch = Batch(['"hi"'], None, ["1"])
    batch.form(InRoom("a", SOCKJS_WEBSOCKET))
    assert batch.form(SOCKJS_WEBSOCKET) == frames.websocket_frame(b'a["hi"]')
    assert batch.form(Positioned(None)).encoded == ['{"o":"1","d":"hi"}']
