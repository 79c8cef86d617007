"""Headers and bodies the SockJS protocol fixes for each kind of response."""

import re

import pytest

NO_CACHE = "no-store, no-cache, no-transform, must-revalidate, max-age=0"
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def open_stream(service, method, path):
    stream = service.raw("%s %s HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n" % (method, path))
    status, headers = stream.read_head()
    stream.close()
    assert status == 200
    return headers


def test_info_is_never_cached_nor_transformed(service):
    response = service.request("GET", service.prefix + "/info")
    assert response.status == 200
    assert response.header("Cache-Control") == NO_CACHE


def test_polling_and_send_responses_are_never_cached_nor_transformed(service):
    session = service.session()
    for method, path, body, headers in [
        ("POST", session + "/xhr", None, {}),
        ("POST", session + "/xhr_send", '["x"]', {}),
        ("GET", session + "/jsonp?c=cb", None, {}),
        ("POST", session + "/jsonp_send", "d=%5B%22x%22%5D", FORM),
    ]:
        response = service.request(method, path, body, headers)
        assert response.status in (200, 204), path
        assert response.header("Cache-Control") == NO_CACHE, path


@pytest.mark.parametrize("method, transport", [
    ("POST", "xhr_streaming"), ("GET", "eventsource"), ("GET", "htmlfile?c=cb")])
def test_streaming_responses_are_never_cached_nor_transformed(service, method, transport):
    headers = open_stream(service, method, "%s/%s" % (service.session(), transport))
    assert headers["cache-control"] == NO_CACHE


def test_eventsource_content_type_is_exactly_text_event_stream(service):
    headers = open_stream(service, "GET", service.session() + "/eventsource")
    assert headers["content-type"] == "text/event-stream"


def test_xhr_send_204_is_text_plain(service):
    session = service.session()
    assert service.request("POST", session + "/xhr").body == "o\n"
    response = service.request("POST", session + "/xhr_send", '["x"]')
    assert response.status == 204
    assert response.header("Content-Type") == "text/plain; charset=UTF-8"


def test_jsonp_frames_start_with_an_empty_comment(service):
    session = service.session()
    assert service.request("GET", session + "/jsonp?c=cb").body == '/**/cb("o");\r\n'


@pytest.mark.parametrize("path", ["/0/0/websocket", "/websocket"])
def test_websocket_url_refuses_other_methods_with_a_bare_405(service, path):
    for headers in ({}, {"Upgrade": "WebSocket", "Connection": "Upgrade"}):
        response = service.request("POST", service.prefix + path, headers=headers)
        assert response.status == 405
        assert response.header("Allow") == "GET"
        assert response.header("Content-Type") is None
        assert response.body == ""


IFRAME = re.compile(r"""<!DOCTYPE html>
<html>
<head>
  <meta http-equiv="X-UA-Compatible" content="IE=edge" />
  <meta http-equiv="Content-Type" content="text/html; charset=UTF-8" />
  <script src="(?P<sockjs_url>[^"]+)"></script>
  <script>
    document.domain = document.domain;
    SockJS.bootstrap_iframe\(\);
  </script>
</head>
<body>
  <h2>Don't panic!</h2>
  <p>This is a SockJS hidden iframe. It's used for cross domain magic.</p>
</body>
</html>\Z""")


@pytest.mark.parametrize("page", [
    "/iframe.html", "/iframe-.html", "/iframe-1.6.1.html", "/iframe-0.1.2abc-dirty.2144.html",
    "/iframe-a.html?t=1234", "/iframe-1.6.1.html?t=qweqweq123"])
def test_iframe_page_loads_the_client_then_bootstraps_it(service, page):
    response = service.request("GET", service.prefix + page)
    assert response.status == 200
    assert response.header("Content-Type") == "text/html; charset=UTF-8"
    cache = response.header("Cache-Control")
    assert "public" in cache and re.search(r"max-age=[1-9][0-9]{6}", cache)
    assert response.header("ETag")
    assert IFRAME.match(response.body)


def test_iframe_page_revalidates_with_a_bare_304(service):
    first = service.request("GET", service.prefix + "/iframe.html")
    again = service.request("GET", service.prefix + "/iframe-1.6.1.html",
                            headers={"If-None-Match": first.header("ETag")})
    assert again.status == 304
    assert again.header("Content-Type") is None
    assert again.body == ""


@pytest.mark.parametrize("page", ["/iframe.htm", "/IFRAME.HTML", "/iframe-/.html"])
def test_malformed_iframe_urls_are_not_found(service, page):
    assert service.request("GET", service.prefix + page).status == 404
