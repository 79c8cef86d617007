"""A service's URL, parsed once: where to connect, and the paths under its prefix."""

import re

from loadtest import records
from loadtest.framing import endpoints


def test_a_url_is_its_host_port_and_prefix():
    service = endpoints.target("http://127.0.0.1:8080/broadcast/")
    assert (service.host, service.port, service.prefix) == ("127.0.0.1", 8080, "/broadcast")
    assert service.url_of("/stats") == "http://127.0.0.1:8080/stats"
    assert endpoints.target("http://localhost/x").port == 80
    assert endpoints.target("http://[::1]:9/b").netloc == "[::1]:9"


def test_an_https_url_is_a_tls_service_on_port_443_unless_given():
    service = endpoints.target("https://127.0.0.1:8443/broadcast?positions=1")
    assert (service.host, service.port, service.prefix, service.tls) == ("127.0.0.1", 8443, "/broadcast", True)
    assert service.positions and service.url_of("/stats") == "https://127.0.0.1:8443/stats"
    assert endpoints.target("https://[::1]/b").port == 443
    assert not endpoints.target("http://127.0.0.1:8080/broadcast").tls


def test_sessions_and_websockets_live_under_the_prefix():
    assert re.match(r"^/broadcast/\d{3}/[a-z0-9]{12}/websocket$",
                    endpoints.endpoint_path("http://127.0.0.1:8080/broadcast", "sockjs"))
    assert endpoints.endpoint_path("http://127.0.0.1:8080/broadcast", "raw") == "/broadcast/websocket"


def test_sockjs_is_another_name_for_the_websocket_transport():
    assert records.transport_name("sockjs") == "websocket"
    assert records.transport_name("xhr-polling") == "xhr-polling"
    assert set(endpoints.HTTP_TRANSPORTS) < set(endpoints.TRANSPORTS)


def test_a_mix_gives_every_client_its_transport_by_the_weights_and_by_its_id():
    mix = endpoints.mix({"websocket": 70, "xhr-streaming": 20, "xhr-polling": 10})
    assert mix == "mix:websocket=70,xhr-streaming=20,xhr-polling=10"
    first_ten = [endpoints.client_transport(mix, i) for i in range(10)]
    assert (first_ten.count("websocket"), first_ten.count("xhr-streaming"), first_ten.count("xhr-polling")) == (7, 2, 1)
    thousand = [endpoints.client_transport(mix, i) for i in range(1000)]
    assert abs(thousand.count("xhr-polling") - 100) <= 2
    assert thousand == [endpoints.client_transport(mix, i) for i in range(1000)]
    assert endpoints.client_transport("raw", 5) == "raw"


def test_the_query_of_the_service_goes_on_every_path_and_may_ask_for_positions():
    service = endpoints.target("http://127.0.0.1:8080/broadcast?positions=1")
    assert service.positions and service.prefix == "/broadcast"
    assert service.with_query("/broadcast/000/abc/htmlfile?c=p") == "/broadcast/000/abc/htmlfile?c=p&positions=1"
    assert endpoints.endpoint_path("http://127.0.0.1:8080/broadcast?positions=1", "raw") == \
        "/broadcast/websocket?positions=1"
    assert not endpoints.target("http://127.0.0.1:8080/broadcast").positions


def test_connections_take_the_source_addresses_in_turn():
    addresses = ["127.0.0.2", "127.0.0.3"]
    assert [endpoints.source_address(addresses, n) for n in range(3)] == [
        ("127.0.0.2", 0), ("127.0.0.3", 0), ("127.0.0.2", 0)]
    assert endpoints.source_address([], 5) is None
