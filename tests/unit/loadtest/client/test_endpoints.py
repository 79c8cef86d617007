"""A service's URL, parsed once: where to connect, and the paths under its prefix."""

import re

from loadtest.client import endpoints


def test_a_url_is_its_host_port_and_prefix():
    service = endpoints.target("http://127.0.0.1:8080/broadcast/")
    assert (service.host, service.port, service.prefix) == ("127.0.0.1", 8080, "/broadcast")
    assert service.url_of("/stats") == "http://127.0.0.1:8080/stats"
    assert endpoints.target("http://localhost/x").port == 80
    assert endpoints.target("http://[::1]:9/b").netloc == "[::1]:9"


def test_sessions_and_websockets_live_under_the_prefix():
    assert re.match(r"^/broadcast/\d{3}/[a-z0-9]{12}/websocket$",
                    endpoints.endpoint_path("http://127.0.0.1:8080/broadcast", "sockjs"))
    assert endpoints.endpoint_path("http://127.0.0.1:8080/broadcast", "raw") == "/broadcast/websocket"
