"""https and wss on the broker's own port (``--certfile``, ``--keyfile``), with a
certificate from a test authority (trustme) that the clients trust, and no other."""

import contextlib
import json
import socket
import subprocess
import sys

import pytest
import trustme

from broker import config
from loadtest.framing.websocket_frames import handshake_request
from sockjs_clients import ALL, WebSocketClient, XhrStreamingClient, wait_until


@pytest.fixture
def tls_broker(start_broker, tls_files):
    broker = start_broker("--certfile", tls_files.certfile, "--keyfile", tls_files.keyfile,
                          "--publish-token", "t")
    broker.tls = tls_files.client_context()
    return broker


def publish(broker, message):
    """POST /publish over https; the answer's status."""
    return broker.request("POST", "/publish", json.dumps(message).encode(),
                          {"Authorization": "Bearer t", "Content-Type": "application/json"})[0]


def test_the_broker_says_it_listens_on_https(tls_broker):
    assert tls_broker.url.startswith("https://127.0.0.1:")


@pytest.mark.parametrize("sender", ALL, ids=lambda c: c.transport)
def test_every_transport_over_tls_sends_and_receives(tls_broker, tls_files, sender):
    context = tls_files.client_context()
    with contextlib.ExitStack() as stack:
        listeners = [stack.enter_context(cls(tls_broker.url, tls=context)) for cls in ALL]
        source = stack.enter_context(sender(tls_broker.url, tls=context))
        source.send("over tls from %s" % sender.transport)
        assert publish(tls_broker, "published over https") == 200
        for client in listeners + [source]:
            got = client.collect(2)
            assert got == ["over tls from %s" % sender.transport, "published over https"], client.transport


def test_a_key_in_the_certificate_file_serves_too(start_broker, tls_files):
    broker = start_broker("--certfile", tls_files.combined)
    with WebSocketClient(broker.url, tls=tls_files.client_context()) as client:
        client.send("one file")
        assert client.receive() == ["one file"]


def test_a_client_that_reads_late_gets_every_byte_in_order(tls_broker, tls_files):
    """The broker falls behind on a TLS socket (a small receive buffer, nothing read):
    its backlog goes out joined, retried after the kernel refuses, and arrives whole."""
    context = tls_files.client_context()
    small_buffer = ((socket.SOL_SOCKET, socket.SO_RCVBUF, 4096),)
    with WebSocketClient(tls_broker.url, tls=context, sockopt=small_buffer) as late, \
            WebSocketClient(tls_broker.url, tls=context) as sender:
        sent = ["%04d" % i + "x" * 6000 for i in range(100)]
        for start in range(0, len(sent), 10):
            sender.send(*sent[start:start + 10])
        assert sender.collect(len(sent)) == sent
        assert wait_until(lambda: tls_broker.stats()["slow_consumers"]["unsent_bytes"] > 100000)
        assert late.collect(len(sent)) == sent
        assert tls_broker.stats()["slow_consumers"]["behind"] == 0


def test_plain_http_and_garbage_on_the_tls_port_cost_the_others_nothing(tls_broker, tls_files):
    """Failed handshakes leave nothing behind: the connected client and the next one are served."""
    context = tls_files.client_context()
    host, port = tls_broker.url.split("//")[1].split("/")[0].split(":")
    with WebSocketClient(tls_broker.url, tls=context) as witness:
        for junk in (handshake_request("%s:%s" % (host, port), "/broadcast/websocket", b"x"),
                     b"\x16\x03\x01\x00\x05hello", b"\x00" * 100):
            with socket.create_connection((host, int(port)), timeout=5) as sock:
                sock.sendall(junk)
                try:
                    while sock.recv(4096):
                        pass
                except ConnectionResetError:
                    pass
        with XhrStreamingClient(tls_broker.url, tls=context) as newcomer:
            witness.send("still here")
            assert witness.receive() == ["still here"]
            assert newcomer.receive() == ["still here"]
    assert tls_broker.stats()["tls"]["handshake_failures"] >= 2
    assert "SSL Error" not in tls_broker.server.output, "one log line per failed handshake"


def test_a_certificate_that_cannot_be_served_stops_the_broker_with_its_reason(tls_files, tmp_path):
    other = trustme.CA().issue_cert("127.0.0.1")
    wrong_key = str(tmp_path / "other.key")
    other.private_key_pem.write_to_path(wrong_key)
    for files, reason in (((tls_files.certfile, wrong_key), "KEY_VALUES_MISMATCH"),
                          ((str(tmp_path / "missing.pem"), tls_files.keyfile), "No such file")):
        run = subprocess.run([sys.executable, "-m", "broker", "--port", "0", "--certfile", files[0],
                              "--keyfile", files[1]], capture_output=True, text=True, timeout=30)
        assert run.returncode == config.CONFIGURATION_ERROR == 2, "systemd would retry it every second"
        assert "--certfile (BROKER_CERTFILE) %s" % files[0] in run.stderr and reason in run.stderr, run.stderr
        assert "Traceback" not in run.stderr, run.stderr


def test_a_late_wss_viewer_of_a_counter_gets_whole_values_and_the_last(tls_broker, tls_files):
    """Conflated values over TLS to a viewer that fell behind: every frame arrives whole,
    in order, the last one included (the rule that keeps a value TLS must write again
    from being replaced is tested without sockets, in test_tls_writes.py)."""
    small_buffer = ((socket.SOL_SOCKET, socket.SO_RCVBUF, 4096),)
    with WebSocketClient(tls_broker.url, tls=tls_files.client_context(), sockopt=small_buffer) as viewer:
        for start in range(0, 400, 50):
            for n in range(start, start + 50):
                status, _ = tls_broker.request("POST", "/publish?key=total",
                                               json.dumps({"total": n, "pad": "x" * (n % 7) * 500}).encode(),
                                               {"Authorization": "Bearer t", "Content-Type": "application/json"})
                assert status == 200
        assert tls_broker.stats()["slow_consumers"]["behind"] == 1
        totals = []
        while not totals or totals[-1] != 399:
            totals += [message["total"] for message in viewer.receive()]
        assert totals == sorted(totals) and len(totals) < 400
