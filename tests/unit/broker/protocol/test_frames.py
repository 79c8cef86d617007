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


@pytest.mark.parametrize("text", ['a["</script><script>x()</script>"]', "<!--<script>", "\u2028\u2029&amp;"])
def test_script_strings_cannot_end_or_change_their_element(text):
    literal = frames.script_string(text)
    assert not set(literal) & set("<>&\u2028\u2029"), literal
    assert json.loads(literal) == text
