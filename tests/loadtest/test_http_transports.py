"""The load client over every SockJS HTTP transport, against a real broker over loopback."""

import asyncio
import sys

import pytest

from loadtest.client import connections
from loadtest.framing import endpoints
import one_step
import result_lines


def run_latency(url, out, *options):
    """One step's records (:mod:`one_step`)."""
    completed = one_step.run(url, out, *options)
    assert completed.returncode == 0, completed.stderr
    return result_lines.read(out)


def check_every_delivery(records, transport):
    assert records[0]["type"] == "run" and records[0]["transport"] == transport
    one_step.check_every_delivery(records)


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
        group = connections.ClientGroup(connections.GroupSpec([url], transport))
        try:
            assert await group.connect(1, timeout=5) == {}
            partial = await group.run_step(400, 1.0, 400)  # about 10 KiB of frames: two reopens at least
            return partial, group.connections[0].reopened
        finally:
            group.close()

    partial, reopened = asyncio.run(asyncio.wait_for(run(), one_step.RUN_TIMEOUT_S))
    assert (partial.sent, partial.received, partial.lost, partial.dropped) == (400, 400, 0, 0)
    assert partial.histogram.get_total_count() == 400
    assert reopened >= 2
    assert partial.reopened == reopened  # the step counts every reopen since its start
