"""The getting-started page's two campaigns, run as written against the quick start's broker:
each ``curl`` line adds to its own room's counter, which a client of both rooms receives saying
the room, and a client of the default room does not."""

import doc_blocks
from sockjs_clients import WebSocketClient, wait_until
from test_readme_commands import EXAMPLE_ORIGIN, GETTING_STARTED, quick_start_broker


def test_the_two_campaigns_counters_each_move_in_their_room(start_broker):
    block = doc_blocks.block_holding(GETTING_STARTED, "room=spring")
    broker = quick_start_broker(start_broker)
    with WebSocketClient(broker.url, query="rooms=spring,autumn") as both, WebSocketClient(broker.url) as default:
        wait_until(lambda: broker.stats()["connections_total"] == 3)
        for line in doc_blocks.command_lines(block):
            doc_blocks.run_shell(doc_blocks.substituted(line, {EXAMPLE_ORIGIN: broker.origin}))
        assert sorted(both.collect(2), key=lambda message: message["r"]) == [
            {"r": "autumn", "d": {"counter": "raised", "value": "40"}},
            {"r": "spring", "d": {"counter": "raised", "value": "100"}}]
        default.send("the default room's own")
        assert default.receive() == ["the default room's own"], "a campaign's total reached the default room"
