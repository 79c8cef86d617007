"""jsonp and htmlfile take the name of a JavaScript function in ``c``: only
``[A-Za-z0-9_.]`` is accepted, anything else answers 500, never a page."""

import pytest

INVALID = ["%20", "*", "abc(", "abc%28", "a-b", "alert(1)//", "%3Cscript%3E"]


@pytest.mark.parametrize("transport", ["jsonp", "htmlfile"])
@pytest.mark.parametrize("callback", INVALID)
def test_invalid_callback_name_answers_500(service, transport, callback):
    response = service.request("GET", "%s/a/a/%s?c=%s" % (service.prefix, transport, callback))
    assert response.status == 500
    assert 'invalid "callback" parameter' in response.body


@pytest.mark.parametrize("transport", ["jsonp", "htmlfile"])
def test_missing_callback_answers_500(service, transport):
    response = service.request("GET", "%s/a/a/%s" % (service.prefix, transport))
    assert response.status == 500
    assert '"callback" parameter required' in response.body


def test_htmlfile_keeps_the_callback_name_as_given(service):
    """sockjs-client 1.x names callbacks like ``_sockjs_global.a1b2``: the
    underscore and the dot must reach the page unchanged."""
    stream = service.raw("GET %s/htmlfile?c=_sockjs_global.a1b2 HTTP/1.1\r\n"
                         "Host: x\r\n\r\n" % service.session())
    try:
        status, _ = stream.read_head()
        assert status == 200
        assert b"var c = parent._sockjs_global.a1b2;" in stream.read_until(b"\r\n\r\n")
    finally:
        stream.close()


def test_jsonp_uses_the_callback_name_as_given(service):
    response = service.request("GET", service.session() + "/jsonp?c=_jp.a1b2")
    assert response.status == 200
    assert '_jp.a1b2("o");' in response.body
