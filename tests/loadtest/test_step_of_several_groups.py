"""A step shared by several client groups (``--procs``) counts every delivery, however late a group starts sending."""

import asyncio

import pytest

from loadtest.client import connections


@pytest.mark.parametrize("transport", ["websocket", "jsonp-polling"])
def test_a_group_that_starts_late_counts_the_others_first_messages(broker_server, transport):
    async def run():
        early = connections.ClientGroup(connections.GroupSpec([broker_server.url], transport))
        late = connections.ClientGroup(connections.GroupSpec([broker_server.url], transport, first_id=2))
        try:
            assert await early.connect(2, timeout=5) == {}
            assert await late.connect(2, timeout=5) == {}
            await asyncio.gather(early.begin_step(), late.begin_step())
            early_step = asyncio.ensure_future(early.run_step(5, 0.5, 10))
            while not all(conn.received for conn in late.connections):  # the early group's first message is in
                await asyncio.sleep(0.01)
            late_partial = await late.run_step(5, 0.5, 10)
            return await early_step, late_partial
        finally:
            early.close()
            late.close()

    partials = asyncio.run(asyncio.wait_for(run(), 30))
    for partial in partials:
        assert (partial.sent, partial.received, partial.lost, partial.dropped) == (5, 10 * 2, 0, 0)
