"""The ``--redis`` URL forms its help names besides ``redis://``, each against a real redis-server:
``unix:///PATH?db=DB`` (a Unix socket, no TCP port at all) and ``rediss://`` (TLS, with the
authority given by ``?ssl_ca_certs=``, and refused without it). A broker on each takes a publish
through the room's stream, which lands in the database the URL names."""

import subprocess

import pytest
import redis

from cluster_clients import publish
from loadtest.contenders import redis_server
from loadtest.contenders.child_process import free_port, stop_process
from sockjs_clients import WebSocketClient, wait_until
from tls_files import TLSFiles

STREAM = "sockjs-broker:/broadcast"


def answers(url):
    try:
        return redis.from_url(url).ping()
    except redis.RedisError:
        return False


def a_publish_reaches_a_client_through(broker, url, text):
    """Once ``broker`` is healthy, ``text`` published there reaches its websocket client, and the
    room's stream in the Redis database at ``url`` holds it."""
    wait_until(lambda: broker.request("GET", "/healthz")[0] == 200, timeout=20)
    client = WebSocketClient(broker.url).open()
    assert publish(broker, text)[0] == 200
    assert client.receive() == [text]
    client.close()
    assert redis.from_url(url).xlen(STREAM) == 1


@pytest.fixture
def start_redis_with(redis_installed):
    """``start(url, *options)``: a redis-server with ``options`` (and nothing kept on disk), ready
    once ``url`` answers PING; each is stopped after the test."""
    started = []

    def start(url, *options):
        process = subprocess.Popen([redis_server.REDIS_SERVER, "--save", "", "--appendonly", "no",
                                    "--loglevel", "warning", *options],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        started.append(process)
        wait_until(lambda: answers(url) or process.poll() is not None, timeout=20)
        assert process.poll() is None, process.stdout.read()
        return url

    yield start
    for process in started:
        stop_process(process)


def test_a_broker_on_a_unix_socket_url_publishes_into_the_database_it_names(start_redis_with, start_broker,
                                                                             tmp_path):
    url = start_redis_with("unix://%s?db=3" % (tmp_path / "redis.sock"), "--port", "0",
                           "--unixsocket", str(tmp_path / "redis.sock"), "--unixsocketperm", "700")
    broker = start_broker("--redis", url, "--publish-token", "t")
    a_publish_reaches_a_client_through(broker, url, "through the socket")
    assert redis.from_url(url.replace("db=3", "db=0")).xlen(STREAM) == 0


def test_a_broker_on_a_rediss_url_trusts_the_authority_it_names_and_no_other(start_redis_with, start_broker,
                                                                             tmp_path):
    tls = TLSFiles(tmp_path)
    authority = str(tmp_path / "authority.pem")
    tls.authority.cert_pem.write_to_path(authority)
    port = free_port()
    url = start_redis_with("rediss://127.0.0.1:%d/0?ssl_ca_certs=%s" % (port, authority), "--port", "0",
                           "--bind", "127.0.0.1", "--tls-port", str(port), "--tls-cert-file", tls.certfile,
                           "--tls-key-file", tls.keyfile, "--tls-auth-clients", "no")
    trusting = start_broker("--redis", url, "--publish-token", "t")
    untrusting = start_broker("--redis", "rediss://127.0.0.1:%d/0" % port)
    a_publish_reaches_a_client_through(trusting, url, "over TLS")
    wait_until(lambda: "CERTIFICATE_VERIFY_FAILED" in str(untrusting.request("GET", "/healthz")[1]), timeout=20)
    assert untrusting.request("GET", "/healthz")[0] == 503
