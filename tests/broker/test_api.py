"""POST /publish, GET /stats and GET /healthz over real HTTP."""

import platform

import pytest

from sockjs_clients import WebSocketClient, XhrPollingClient, wait_until

AUTH = {"Authorization": "Bearer s3cret"}


def test_publish_reaches_every_client_and_counts_recipients(broker):
    with WebSocketClient(broker.url) as a, XhrPollingClient(broker.url) as b:
        status, answer = broker.request("POST", "/publish", b"plain text", AUTH)
        assert (status, answer["recipients"], answer["position"]["offset"]) == (200, 2, "1")
        assert answer["position"]["epoch"] == broker.stats()["history"]["epoch"]
        assert a.receive() == ["plain text"]
        assert b.receive() == ["plain text"]


def test_json_body_is_published_as_a_json_value(broker):
    with WebSocketClient(broker.url) as a:
        headers = dict(AUTH, **{"Content-Type": "application/json; charset=utf-8"})
        assert broker.request("POST", "/publish", b'{"raised": 1234}', headers)[0] == 200
        assert a.receive() == [{"raised": 1234}]


@pytest.mark.parametrize("headers, status", [
    ({}, 401),
    ({"Authorization": "Basic czNjcmV0"}, 401),
    ({"Authorization": "Bearer"}, 401),
    ({"Authorization": "Bearer wrong"}, 403),
    ({"Authorization": "Bearer s3cret-but-longer"}, 403),
])
def test_publish_refuses_a_missing_or_wrong_token(broker, headers, status):
    with WebSocketClient(broker.url) as a:
        got, body = broker.request("POST", "/publish", b"nope", headers)
        assert got == status
        assert "error" in body
        broker.request("POST", "/publish", b"yes", AUTH)
        assert a.receive() == ["yes"]
    assert broker.stats()["messages_in"] == 1


def test_unauthorized_answer_names_the_scheme(broker):
    import urllib.request
    request = urllib.request.Request(broker.origin + "/publish", data=b"x", method="POST")
    with pytest.raises(urllib.error.HTTPError) as error:
        urllib.request.urlopen(request, timeout=5)
    assert error.value.code == 401
    assert error.value.headers["WWW-Authenticate"].startswith("Bearer")


def test_publish_is_disabled_without_a_token(start_broker):
    open_broker = start_broker()
    assert open_broker.request("POST", "/publish", b"x", {"Authorization": "Bearer "})[0] == 404
    assert open_broker.request("POST", "/publish", b"x", {"Authorization": "Bearer None"})[0] == 404


@pytest.mark.parametrize("body, headers, status", [
    (b"", {}, 400),
    (b"\xff\xfe", {}, 400),
    (b"{not json", {"Content-Type": "application/json"}, 400),
    (b"x" * (64 * 1024 + 1), {}, 413),
])
def test_publish_refuses_bad_bodies_clearly(broker, body, headers, status):
    got, answer = broker.request("POST", "/publish", body, dict(AUTH, **headers))
    assert got == status
    assert answer["error"]
    assert broker.stats()["messages_in"] == 0


def test_publish_takes_only_post(broker):
    assert broker.request("GET", "/publish")[0] == 405


def test_stats_count_connections_and_messages(broker):
    with WebSocketClient(broker.url) as a, WebSocketClient(broker.url) as b, \
            XhrPollingClient(broker.url) as c:
        a.send("one", "two")
        for client in (a, b, c):
            assert client.collect(2) == ["one", "two"]
        stats = wait_until(lambda: (lambda s: s if s["messages_out"] == 6 else None)(broker.stats()))
        assert stats["connections_total"] == 3
        assert stats["connections"] == {"websocket": 2, "xhr": 1}
        assert stats["messages_in"] == 2
        assert stats["slow_consumer_disconnects"] == 0
        assert stats["uptime_s"] > 0
        assert stats["interpreter"].startswith(platform.python_implementation())
        assert stats["version"]
        if platform.python_implementation() == "PyPy":
            assert set(stats["gc"]) == {"major_started", "major_finished", "minor_collections", "heap",
                                         "nursery"}
            assert set(stats["gc"]["heap"]) == {"used_bytes", "live_bytes"}
            assert set(stats["gc"]["nursery"]) == {"bytes", "set_by"}
            assert set(stats["jit"]) == {"parameters", "set_by"}
        else:
            assert set(stats["gc"]) == {"freezes", "audits", "thaws"}
            assert "jit" not in stats
        # Rates are per second over a sliding window sampled every second.
        stats = wait_until(lambda: (lambda s: s if s["messages_out_per_s"] > 0 else None)(
            broker.stats()), timeout=5)
        assert 0 < stats["messages_in_per_s"] <= 2


def test_healthz(broker):
    assert broker.request("GET", "/healthz") == (200, {"status": "ok"})
