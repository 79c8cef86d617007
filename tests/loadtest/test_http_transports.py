"""The load client over every SockJS HTTP transport, against a real broker over loopback."""

import asyncio
import subprocess
import sys

import pytest

from loadtest.client import connections, endpoints
from checkout import ROOT
import result_lines

RUN_TIMEOUT_S = 60


def run_latency(url, out, *options):
    """``python -m loadtest`` for one short step of 5 clients at 20 msgs/s; its records."""
    completed = subprocess.run(
        [sys.executable, "-m", "loadtest", "--url", url, "--clients", "5", "--rate", "20", "--duration", "1",
         "--pause", "0.1", "--out", str(out), *options],
        cwd=ROOT, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert completed.returncode == 0, completed.stderr
    return result_lines.read(out)


def check_every_delivery(records, transport):
    assert records[0]["type"] == "run" and records[0]["transport"] == transport
    (step,) = [r for r in records if r["type"] == "step"]
    assert step["sent"] == 20 and step["received"] == 20 * 5
    assert step["lost"] == step["dropped"] == 0 and not step["overloaded"]
    assert 0 < step["rtt_ms"]["p50"] <= step["rtt_ms"]["max"]
    assert [r["end"] for r in records if r["type"] == "level"] == ["sweep done"]


@pytest.mark.parametrize("transport", endpoints.HTTP_TRANSPORTS)
def test_every_http_transport_delivers_every_message(broker_server, tmp_path, transport):
    records = run_latency(broker_server.url, tmp_path / "run.jsonl", "--transport", transport)
    check_every_delivery(records, transport)


def test_sockjs_is_recorded_as_the_websocket_it_means(broker_server, tmp_path):
    check_every_delivery(run_latency(broker_server.url, tmp_path / "run.jsonl", "--transport", "sockjs"), "websocket")


def test_a_mix_of_transports_over_two_processes(broker_server, tmp_path):
    records = run_latency(broker_server.url, tmp_path / "run.jsonl", "--mix", "websocket=2,xhr-streaming=2,jsonp-polling=1",
                          "--procs", "2")
    check_every_delivery(records, "mix:websocket=2,xhr-streaming=2,jsonp-polling=1")


@pytest.mark.parametrize("transport", ["xhr-streaming", "eventsource", "htmlfile"])
def test_a_stream_past_the_response_limit_is_reopened_and_loses_nothing(start_server, transport):
    """The conformance service ``/echo`` ends its streams after 4 KiB; with one client its echo is a broadcast."""
    server = start_server(sys.executable, "-m", "broker.conformance", "--host", "127.0.0.1", "--port", "0")
    url = server.url.rsplit("/", 1)[0] + "/echo"

    async def run():
        group = connections.ClientGroup([url], transport)
        try:
            assert await group.connect(1, timeout=5) == {}
            partial = await group.run_step(400, 1.0, 400)  # about 10 KiB of frames: two reopens at least
            return partial, group.connections[0].reopened
        finally:
            group.close()

    partial, reopened = asyncio.run(asyncio.wait_for(run(), RUN_TIMEOUT_S))
    assert (partial.sent, partial.received, partial.lost, partial.dropped) == (400, 400, 0, 0)
    assert partial.histogram.get_total_count() == 400
    assert reopened >= 2
    assert partial.reopened == reopened  # the step counts every reopen since its start
