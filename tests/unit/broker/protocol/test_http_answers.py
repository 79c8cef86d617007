"""The answers to polls and sends, stated once: the bytes a kept-alive connection writes and
the headers Tornado's handler sets are the same answer."""

import pytest

from broker.protocol import http_answers
from broker.protocol.http_answers import (ANY_ORIGIN, CONTENT_LENGTH, CORS, DATE, JSONP_POLL_ANSWER,
                                          JSONP_SEND_ANSWER, XHR_POLL_ANSWER, XHR_SEND_ANSWER, AnswerForm,
                                          cors_headers, jsonp_poll_body, xhr_poll_body)

DATE_VALUE = "Thu, 26 Nov 2026 15:25:30 GMT"
NO_CACHE = "no-store, no-cache, no-transform, must-revalidate, max-age=0"
ANSWERS = {
    "xhr": (XHR_POLL_ANSWER, xhr_poll_body('a["hi"]')),
    "jsonp": (JSONP_POLL_ANSWER, jsonp_poll_body("_jp.a1b2", 'a["</script>"]')),
    "xhr_send": (XHR_SEND_ANSWER, http_answers.XHR_SEND_BODY),
    "jsonp_send": (JSONP_SEND_ANSWER, http_answers.JSONP_SEND_BODY),
}


def parsed(answer):
    """(status, reason, headers as (name, value) pairs in order, body) of an answer's bytes."""
    head, body = answer.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    _, status, reason = lines[0].split(" ", 2)
    return int(status), reason, [tuple(line.split(": ", 1)) for line in lines[1:]], body


@pytest.mark.parametrize("kind", sorted(ANSWERS))
@pytest.mark.parametrize("origin", [None, "https://example.com"])
def test_the_bytes_and_the_headers_are_one_answer(kind, origin):
    form, body = ANSWERS[kind]
    status, reason, headers, written = parsed(form.answer(DATE_VALUE, origin, body))
    assert (status, reason, written) == (form.status, form.reason, body)
    assert ("Date", DATE_VALUE) in headers
    assert [header for header in headers if header[0] != "Date"] == form.headers(origin, len(body))


@pytest.mark.parametrize("kind", sorted(ANSWERS))
def test_every_answer_is_uncacheable_and_untransformable(kind):
    form, body = ANSWERS[kind]
    assert ("Cache-Control", NO_CACHE) in form.headers(None, len(body))


def test_each_answer_s_status_type_and_length():
    described = {}
    for kind, (form, body) in ANSWERS.items():
        headers = dict(form.headers(None, len(body)))
        described[kind] = (form.status, headers["Content-Type"], headers.get("Content-Length"))
    assert described == {
        "xhr": (200, "application/javascript; charset=UTF-8", "8"),
        "jsonp": (200, "application/javascript; charset=UTF-8", str(len(ANSWERS["jsonp"][1]))),
        "xhr_send": (204, "text/plain; charset=UTF-8", None),
        "jsonp_send": (200, "text/plain; charset=UTF-8", "2"),
    }


def test_a_named_origin_is_answered_with_credentials_and_none_with_any():
    assert cors_headers(None) == ANY_ORIGIN == (("Vary", "Origin"), ("Access-Control-Allow-Origin", "*"))
    assert cors_headers("https://example.com") == (("Vary", "Origin"),
                                                   ("Access-Control-Allow-Origin", "https://example.com"),
                                                   ("Access-Control-Allow-Credentials", "true"))


def test_a_jsonp_poll_names_no_origin_and_keeps_its_script_unsniffed():
    headers = JSONP_POLL_ANSWER.headers("https://example.com", 10)
    assert not [name for name, _ in headers if name.startswith("Access-Control") or name == "Vary"]
    assert ("X-Content-Type-Options", "nosniff") in headers
    assert jsonp_poll_body("cb", 'a["</script>"]') == b'/**/cb("a[\\"<\\/script>\\"]");\r\n'


def test_an_origin_or_a_frame_with_a_percent_sign_is_written_as_given():
    answer = XHR_POLL_ANSWER.answer(DATE_VALUE, "https://a%sb.example", xhr_poll_body('a["100%d"]'))
    _, _, headers, body = parsed(answer)
    assert ("Access-Control-Allow-Origin", "https://a%sb.example") in headers
    assert body == b'a["100%d"]\n'


def test_a_message_beyond_latin_1_is_sent_as_utf_8_and_counted_in_bytes():
    body = xhr_poll_body('a["\u00e9\u2603"]')
    _, _, headers, written = parsed(XHR_POLL_ANSWER.answer(DATE_VALUE, None, body))
    assert written == 'a["\u00e9\u2603"]\n'.encode() and ("Content-Length", str(len(written))) in headers


@pytest.mark.parametrize("headers", [
    (("Content-Type", "text/plain"),),
    (CORS, DATE),
    (DATE, CONTENT_LENGTH, CORS),
], ids=["no date", "cors before the date", "length before cors"])
def test_a_form_s_slots_come_date_cors_length(headers):
    with pytest.raises(ValueError):
        AnswerForm(200, *headers)
