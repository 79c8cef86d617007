"""The load client's backend: POST /publish to a real broker, and to servers that fail it."""

import select
import socket
import threading
import urllib.parse

import pytest

from loadtest.client.publisher import Publisher, PublishFailed
from sockjs_clients import WebSocketClient


def address(broker):
    parts = urllib.parse.urlsplit(broker.origin)
    return parts.hostname, parts.port


def test_published_messages_are_answered_and_delivered(broker):
    publisher = Publisher(*address(broker), "s3cret", connections=2)
    with WebSocketClient(broker.url) as listener:
        assert publisher.publish([b"one", b"two"]) == 2
        assert sorted(listener.collect(2)) == ["one", "two"]
    publisher.close()


def test_a_refusal_names_the_status_and_the_reason(broker):
    publisher = Publisher(*address(broker), "wrong")
    with pytest.raises(PublishFailed, match="answered 403: .*wrong token"):
        publisher.publish([b"x"])
    publisher.close()


@pytest.fixture
def listening():
    """A loopback port whose connections the kernel accepts and nobody answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    yield server
    server.close()


def test_a_broker_that_does_not_answer_fails_the_publish_in_time(listening):
    publisher = Publisher(*listening.getsockname(), timeout=0.5)
    with pytest.raises(PublishFailed, match=r"no answer within 0.5 s"):
        publisher.publish([b"x"])
    publisher.close()


def test_a_broker_that_hangs_up_on_a_request_fails_the_publish(listening):
    publisher = Publisher(*listening.getsockname(), timeout=5)
    connection, _ = listening.accept()

    def hang_up_once_asked():
        connection.settimeout(10)
        connection.recv(4096)
        connection.close()

    hanging_up = threading.Thread(target=hang_up_once_asked)
    hanging_up.start()
    with pytest.raises(PublishFailed, match="closed the connection"):
        publisher.publish([b"x"])
    hanging_up.join(10)
    publisher.close()


def test_a_connection_the_broker_closed_while_idle_is_opened_anew_and_the_message_published_once(start_broker):
    broker = start_broker("--publish-token", "s3cret", "--replay", "0", "--header-timeout", "0.5")
    publisher = Publisher(*address(broker), "s3cret", connections=2)
    with WebSocketClient(broker.url) as listener:
        assert publisher.publish([b"one"]) == 1
        assert listener.collect(1) == ["one"]
        # both sockets idle past the header timeout: the broker closes them (readable at EOF)
        assert all(select.select([sock], [], [], 20)[0] for sock in publisher.sockets)
        assert publisher.publish([b"two", b"three"]) == 2
        assert sorted(listener.collect(2)) == ["three", "two"]
        assert publisher.publish([b"four"]) == 1, "the socket opened anew stays in use"
        assert listener.collect(1) == ["four"]
    publisher.close()
