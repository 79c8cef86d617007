"""The private names of Tornado, sockjs-tornado and redis-py: all in
broker._internals, each still there in the installed libraries."""

import asyncio
import os
import platform
import signal
import subprocess
import sys

import pytest

import redis
import redis.asyncio

from broker import _internals
from checkout import ROOT


def unsent(pool):
    """Bytes the transports of ``pool``'s connections hold, not yet taken by the kernel."""
    return sum(connection._writer.transport.get_write_buffer_size()
               for connection in pool._in_use_connections if connection._writer is not None)


def test_abort_redis_connections_fails_a_write_the_kernel_could_not_buffer(start_redis):
    server = start_redis()

    async def abort_a_stuck_write():
        client = redis.asyncio.from_url(server.url)
        try:
            await client.ping()
            server.process.send_signal(signal.SIGSTOP)
            try:
                stuck = asyncio.ensure_future(client.set("big", b"x" * (24 * 1024 * 1024)))
                deadline = asyncio.get_running_loop().time() + 5
                while not unsent(client.connection_pool):
                    assert asyncio.get_running_loop().time() < deadline, "the kernel took 24 MB for a stopped Redis"
                    await asyncio.sleep(0.01)
                _internals.abort_redis_connections(client.connection_pool)
                done, _ = await asyncio.wait([stuck], timeout=5)
                assert done, "the write still waits: Pool._available_connections, _in_use_connections " \
                             "or Connection._writer changed"
                failure = stuck.exception()
            finally:
                server.process.send_signal(signal.SIGCONT)
            # redis-py reconnects on the next call; the unsent part was dropped, not applied.
            return failure, await client.get("big")
        finally:
            await client.aclose()

    failure, stored = asyncio.run(abort_a_stuck_write())
    assert isinstance(failure, (redis.RedisError, OSError)), repr(failure)
    assert stored is None


@pytest.mark.skipif(platform.python_implementation() != "PyPy", reason="PyPy's gc module")
def test_pypys_nursery_size_is_read_as_a_number():
    """``gc.get_stats()._s.nursery_size`` (PyPy 7.3): the size PYPY_GC_NURSERY set, in bytes."""
    done = subprocess.run([sys.executable, "-c", "from broker import _internals; print(_internals.pypy_nursery_bytes())"],
                          capture_output=True, text=True,
                          env=dict(os.environ, PYPY_GC_NURSERY="3MB", PYTHONPATH=ROOT))
    assert done.stdout.strip() == str(3 << 20), done.stderr
