import json
import struct

import pytest

from broker.protocol import frames


def test_messages_are_json_with_ascii_escapes():
    assert frames.encode_message("a\u2028b\u00e9") == '"a\\u2028b\\u00e9"'
    assert frames.encode_message({"n": [1, 2]}) == '{"n":[1,2]}'


@pytest.mark.parametrize("value", [float("nan"), float("inf"), [float("-inf")], b"bytes"])
def test_values_without_json_text_are_refused(value):
    with pytest.raises(ValueError):
        frames.encode_message(value)


def test_websocket_frame_lengths_follow_rfc6455():
    assert frames.websocket_frame(b"hi") == b"\x81\x02hi"
    medium = frames.websocket_frame(b"x" * 126)
    assert medium[:4] == b"\x81\x7e" + struct.pack("!H", 126) and len(medium) == 130
    large = frames.websocket_frame(b"x" * 65536)
    assert large[:10] == b"\x81\x7f" + struct.pack("!Q", 65536) and len(large) == 65546
    assert frames.websocket_frame(b"", 0x8) == b"\x88\x00"


def test_a_message_over_the_bound_is_refused_as_its_escaped_text_counts():
    emoji = "\U0001f600" * 100  # 400 bytes of UTF-8, 1,200 of JSON text: "\\ud83d\\ude00" each
    assert len(frames.encode_message(emoji, 1202)) == 1202
    with pytest.raises(frames.MessageTooBig, match="1202 bytes, escapes included: over 1201"):
        frames.encode_message(emoji, 1201)
    with pytest.raises(frames.MessageTooBig):
        frames.encode_message({"n": "<" * 10}, 17)


@pytest.mark.parametrize("text", ['a["</script><script>x()</script>"]', "<!--<script>", "</SCRIPT", "<<!--/",
                                  "\u2028\u2029&amp;"])
def test_script_strings_cannot_end_or_change_their_element(text):
    literal = frames.script_string(text)
    assert "</" not in literal and "<!--" not in literal and not set(literal) & set("\u2028\u2029"), literal
    assert json.loads(literal) == text


@pytest.mark.parametrize("text", ["<" * 999, "</" * 500, "<!--" * 250, '"' * 999, "\\" * 999,
                                  frames.encode_message(["</<!--\"\U0001f600&>"] * 50)])
def test_a_script_string_grows_its_text_by_a_bounded_factor(text):
    literal = frames.script_string(text)
    assert len(literal) <= frames.SCRIPT_STRING_GROWTH * len(text) + 2
    if set(text) == {"<"}:
        assert literal == '"%s"' % text  # a "<" alone is no markup: no escape


def test_each_stream_carries_a_frame_in_its_own_framing_chunked_or_not():
    assert frames.stream_frame("xhr_streaming", "h", False) == b"h\n"
    assert frames.stream_frame("eventsource", "o", False) == b"data: o\r\n\r\n"
    assert frames.stream_frame("htmlfile", 'a["</script>"]', False) == (
        b'<script>\np("a[\\"<\\/script>\\"]");\n</script>\r\n')
    assert frames.stream_frame("xhr_streaming", "a" * 20, True) == b"15\r\n" + b"a" * 20 + b"\n\r\n"
    assert frames.http_chunk(b"x" * 255) == b"ff\r\n" + b"x" * 255 + b"\r\n"


def test_a_chunk_tells_the_size_of_the_data_it_carries():
    for size in (1, 15, 16, 255, 256, 70000):
        assert frames.chunk_size(frames.http_chunk(b"x" * size)) == size


def test_a_message_frame_is_the_json_array_of_its_texts():
    body = ",".join([frames.encode_message("hi"), frames.encode_message(7)])
    assert frames.message_frame(body) == 'a["hi",7]'
    assert frames.decode_json(frames.message_frame(body)[1:]) == ["hi", 7]
