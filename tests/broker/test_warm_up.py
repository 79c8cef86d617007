"""--warm-up-sessions: before it listens, the broker opens sessions of every transport on a room and a
loopback port of its own (broker.ops.warm_up), each sending a message unless clients may not
publish, then drops them; its clients find a room without them."""

import asyncio
import gc
import logging
from urllib.parse import urlsplit

from sockjs.tornado.sessioncontainer import SessionContainer
from sockjs.tornado.stats import StatsCollector
from sockjs_clients import WebSocketClient, XhrPollingClient, wait_until

from broker.app import warm_up_sessions
from broker.config import FLAGS, Config
from broker.core.hub import Hub
from broker.ops import warm_up
from broker.transports.router import BrokerRouter

AUTH = {"Authorization": "Bearer s3cret"}
NODE_PARTS = (BrokerRouter, Hub, SessionContainer, StatsCollector)


def test_a_warmed_up_broker_listens_with_a_room_of_its_clients_only(start_broker):
    broker = start_broker("--warm-up-sessions", "60", "--log-level", "info", "--publish-token", "s3cret")
    assert wait_until(lambda: "warmed up: 60 sessions opened" in broker.server.output), broker.server.output
    stats = broker.stats()
    assert (stats["connections_total"], stats["sessions"], stats["messages_out"]) == (0, 0, 0)
    clients = [WebSocketClient(broker.url).open(), XhrPollingClient(broker.url).open()]
    assert broker.request("POST", "/publish", b"after", AUTH)[0] == 200
    for client in clients:
        assert client.receive() == ["after"], client.transport
    assert broker.stats()["connections_total"] == 2


def live(kinds):
    gc.collect()
    return {kind.__name__: sum(1 for thing in gc.get_objects() if type(thing) is kind) for kind in kinds}


def test_the_warm_up_opens_every_transport_and_leaves_no_part_of_its_node_behind():
    """Not even to the event loop it ran on: its timers are stopped, its connections closed."""
    async def warm_up_then_count():
        before = live(NODE_PARTS)
        opened = await warm_up_sessions(Config(warm_up=3 * len(warm_up.OPENINGS)))
        for _ in range(100):  # the loop turns that close the server's ends of the connections
            if live(NODE_PARTS) == before:
                break
            await asyncio.sleep(0.01)
        return opened, before, live(NODE_PARTS)

    opened, before, after = asyncio.run(warm_up_then_count())
    assert opened == 3 * len(warm_up.OPENINGS)
    assert after == before


def open_sessions(broker, count, publish=True):
    async def warm():
        deadline = asyncio.get_running_loop().time() + 30
        return await warm_up.open_sessions(urlsplit(broker.url).port, "/broadcast", count, deadline, publish)
    return asyncio.run(warm())


def test_each_warm_up_session_sends_a_message_on_its_transport_and_reads_it_back(start_broker):
    broker = start_broker()
    assert open_sessions(broker, 2 * len(warm_up.OPENINGS)) == 2 * len(warm_up.OPENINGS)
    assert broker.stats()["messages_in"] == 2 * len(warm_up.OPENINGS)


def test_where_clients_may_not_publish_the_warm_up_sends_nothing(start_broker):
    broker = start_broker("--no-client-publish", "--warm-up-sessions", "12", "--log-level", "info")
    assert wait_until(lambda: "warmed up: 12 sessions opened" in broker.server.output), broker.server.output
    assert open_sessions(broker, len(warm_up.OPENINGS), publish=False) == len(warm_up.OPENINGS)
    assert broker.stats()["messages_in"] == 0


def test_where_a_warm_up_message_would_be_over_the_size_limit_the_warm_up_sends_nothing(start_broker):
    """Its send would close its session: no echo would come, and the warm-up would stop."""
    too_small = str(warm_up.LARGEST_SEND - 1)
    broker = start_broker("--max-message-size", too_small, "--warm-up-sessions", "12", "--log-level", "info")
    assert wait_until(lambda: "warmed up: 12 sessions opened" in broker.server.output), broker.server.output
    # The warm-up's room is gone with it: what it sent is decided, not counted, here.
    assert not warm_up.may_send(True, warm_up.LARGEST_SEND - 1)
    assert warm_up.may_send(True, warm_up.LARGEST_SEND)


def test_the_warm_up_flag_names_the_size_of_its_send():
    (flag,) = [flag for flag in FLAGS if flag.name == "--warm-up-sessions"]
    assert "--max-message-size under %d bytes" % warm_up.LARGEST_SEND in flag.help


def test_a_warm_up_stops_at_the_first_session_that_fails(caplog):
    async def against_a_closed_port():
        closed = await asyncio.start_server(lambda reader, writer: writer.close(), warm_up.HOST, 0)
        port = closed.sockets[0].getsockname()[1]
        closed.close()
        await closed.wait_closed()
        loop = asyncio.get_running_loop()
        return await warm_up.open_sessions(port, "/broadcast", 10, loop.time() + 10)

    with caplog.at_level(logging.WARNING, "broker.ops.warm_up"):
        assert asyncio.run(against_a_closed_port()) == 0
    assert "warm-up stopped at session 0" in caplog.text


def test_a_warm_up_ends_at_its_deadline(caplog):
    async def out_of_time():
        return await warm_up.open_sessions(1, "/broadcast", 10, asyncio.get_running_loop().time())

    with caplog.at_level(logging.WARNING, "broker.ops.warm_up"):
        assert asyncio.run(out_of_time()) == 0
    assert "0 sessions of 10 opened in the time allowed" in caplog.text
