"""Calls to Redis answered in time, or failed: the backplane's only timer on Redis.

Rules this module keeps:

* A Redis that does not answer within :data:`REPLY_TIMEOUT_S` (stopped, or
  out of reach without a reset) has failed: the connections of the client's
  pool are aborted, which fails what waits on them, a write the kernel could
  not buffer included (what it still held unsent is dropped, not flushed
  whenever Redis reads again), and the call fails with redis-py's
  ``TimeoutError``.
* One timer per call, not redis-py's socket timeout, which costs a task and
  two timers per command.
* When the timer fires, the verdict waits :data:`SILENCE_CHECK_S` more: after
  a stall of this process (a long collection, a busy moment) the answer may
  be waiting in the socket already, read and parsed a few loop iterations
  later. An answer there is not a silence.
"""

import asyncio

from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as NoAnswer

from broker import _internals
from broker.cluster import redis_address

BLOCK_MS = 1000
# A blocked XREAD answers within BLOCK_MS; a Redis silent for longer than this is taken as gone.
REPLY_TIMEOUT_S = BLOCK_MS / 1000.0 + 2.0
# What a reply that was waiting in the socket when the timer fired may take to be read.
SILENCE_CHECK_S = 0.1
FAILURES = (RedisError, OSError)


class Replies:
    """The calls made through ``redis`` (a ``redis.asyncio.Redis``), each answered in time."""

    def __init__(self, redis):
        self.redis = redis
        self._silences = 0
        self._disconnecting = None

    @classmethod
    def to(cls, address, **options):
        """The calls made through a new client of ``address`` (a
        :class:`broker.cluster.redis_address.RedisAddress`), given redis-py's ``options``: no
        retries inside the client (its callers retry with their own backoff, and a failed
        publish is answered at once), and no socket timeout (see the module's rules)."""
        return cls(redis_address.connect(address, REPLY_TIMEOUT_S, socket_connect_timeout=REPLY_TIMEOUT_S,
                                         retry=Retry(NoBackoff(), 0), lib_name=None, lib_version=None, **options))

    async def answer(self, call):
        """What ``call`` (a coroutine on :attr:`redis`) returns, in time (see the module's rules)."""
        silences = self._silences
        answered = []
        loop = asyncio.get_running_loop()
        timer = loop.call_later(REPLY_TIMEOUT_S, loop.call_later, SILENCE_CHECK_S, self._silent, answered)
        try:
            return await call
        except FAILURES:
            if self._silences != silences:
                raise NoAnswer("no answer within %g s" % REPLY_TIMEOUT_S) from None
            raise
        finally:
            answered.append(True)
            timer.cancel()

    def _silent(self, answered):
        if answered:
            return
        self._silences += 1
        _internals.abort_redis_connections(self.redis.connection_pool)
        self._disconnecting = asyncio.ensure_future(self._disconnect())

    async def _disconnect(self):
        try:
            await self.redis.connection_pool.disconnect()
        except FAILURES:  # closed all the same
            pass
