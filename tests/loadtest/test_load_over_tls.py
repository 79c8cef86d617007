"""The load client over TLS (an https URL) against a real broker serving https and wss, on every transport:
every connection verified against the authority it is told to trust (``--tls-ca``), and no other."""

import asyncio
import subprocess
import sys
import urllib.parse

import pytest

from loadtest.client import http_sessions, tls_context
from loadtest.client.publisher import Publisher
from loadtest.framing import endpoints
from checkout import ROOT
from sockjs_clients import WebSocketClient
import one_step
import result_lines


@pytest.fixture
def tls_broker(start_broker, tls_files):
    broker = start_broker("--certfile", tls_files.certfile, "--keyfile", tls_files.keyfile,
                          "--publish-token", "t", "--client-rate", "0")
    broker.tls = tls_files.client_context()
    return broker


@pytest.fixture
def authority(tls_files, tmp_path):
    """The test authority's certificate as a file: what ``--tls-ca`` is given."""
    path = tmp_path / "authority.pem"
    tls_files.authority.cert_pem.write_to_path(str(path))
    return str(path)


def check_every_delivery_over_tls(records, url, transport):
    run, server = records[:2]
    assert (run["type"], run["url"], run["transport"]) == ("run", url, transport)
    assert (server["type"], server["tls"]) == ("server", True)
    assert server["runtime"].startswith(("CPython ", "PyPy "))  # read from the broker's /stats, over https
    one_step.check_every_delivery(records)


@pytest.mark.parametrize("transport", endpoints.TRANSPORTS)
def test_every_transport_delivers_every_message_over_tls(tls_broker, authority, tmp_path, transport):
    assert tls_broker.url.startswith("https://127.0.0.1:")
    done = one_step.run(tls_broker.url, tmp_path / "run.jsonl", "--tls-ca", authority, "--transport", transport)
    assert done.returncode == 0, done.stderr
    check_every_delivery_over_tls(result_lines.read(tmp_path / "run.jsonl"), tls_broker.url, transport)


def test_worker_processes_trust_what_they_are_told_to(tls_broker, authority, tmp_path):
    mix = "mix:websocket=1,xhr-streaming=1,xhr-polling=1"
    done = one_step.run(tls_broker.url, tmp_path / "run.jsonl", "--tls-ca", authority, "--procs", "2",
                        "--mix", mix[len("mix:"):])
    assert done.returncode == 0, done.stderr
    check_every_delivery_over_tls(result_lines.read(tmp_path / "run.jsonl"), tls_broker.url, mix)


def test_without_the_authority_the_system_s_trust_refuses_the_broker(tls_broker, tmp_path):
    done = one_step.run(tls_broker.url, tmp_path / "run.jsonl")
    assert done.returncode == 1
    assert "no connection to %s opened: 5 " % tls_broker.url in done.stderr
    assert "CERTIFICATE_VERIFY_FAILED" in done.stderr


def test_ping_over_tls(tls_broker, authority):
    done = subprocess.run([sys.executable, "-m", "loadtest", "ping", "--url", tls_broker.url, "--tls-ca", authority,
                           "--transport", "xhr-streaming"], cwd=ROOT, capture_output=True, text=True,
                          timeout=one_step.RUN_TIMEOUT_S)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ping %s: round trip " % tls_broker.url)


def test_the_publisher_and_the_stats_go_over_tls_too(tls_broker, authority):
    service = endpoints.target(tls_broker.url)
    tls_context.trust(authority)
    try:
        status, stats = asyncio.run(http_sessions.get_json(tls_broker.url, "/stats"))
        assert status == 200 and "sessions" in stats
        publisher = Publisher(service.host, service.port, "t", connections=2,
                              ssl_context=tls_context.context_for(service))
        with WebSocketClient(tls_broker.url, tls=tls_broker.tls) as listener:
            assert publisher.publish([b"one", b"two"]) == 2
            assert sorted(listener.collect(2)) == ["one", "two"]
        publisher.close()
    finally:
        tls_context.trust(None)


def test_an_http_url_to_the_tls_port_is_no_silent_success(tls_broker, authority, tmp_path):
    parts = urllib.parse.urlsplit(tls_broker.url)
    plain = parts._replace(scheme="http").geturl()
    done = one_step.run(plain, tmp_path / "run.jsonl", "--tls-ca", authority)
    assert done.returncode == 1
    assert "no connection to %s opened" % plain in done.stderr
