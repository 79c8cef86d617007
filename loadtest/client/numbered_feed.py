"""A backend's numbered messages: 1, 2, 3 ... at a steady rate, through ``POST /publish`` to a cluster's brokers in turn.

Rules:

- Message ``n`` is ``"<feed id>:<n>:<t_us>"``, published at ``start + n / rate``: a late one
  does not push the next ones later.
- The brokers take the messages in turn; one ``away`` (:meth:`NumberedFeed.leave`) takes none
  until it is :meth:`~NumberedFeed.back`, on a new connection. A broker leaves between two
  publishes, never during one: no message is in flight to a broker on its way out.
- Each publish is a blocking Publisher call in a thread; one that fails ends the feed. With
  ``retry_s`` (a failover) it carries an ``Idempotency-Key`` and, refused, is tried again as it
  was at the next broker every :data:`RETRY_PAUSE_S`, for up to ``retry_s`` seconds
  (``refused_at``: the first refusal, ``back_at``: the first 200 after it, of ``resumed``).
"""

import asyncio
import time

from loadtest.client import tls_context
from loadtest.client.deliveries import now_us
from loadtest.client.publisher import PublishFailed, Publisher
from loadtest.framing import endpoints, payload

# Seconds between a refused publish and its retry: the unavailability is measured to about this.
RETRY_PAUSE_S = 0.05


class NumberedFeed:
    """Messages 1, 2, ... at ``rate`` a second to the brokers of ``urls`` in turn, with the publish ``token``."""

    def __init__(self, urls, token, rate, retry_s=0.0):
        self.urls = list(urls)
        self.token = token
        self.rate = rate
        self.retry_s = retry_s
        self.published = 0
        self.refused_at = self.back_at = self.resumed = None
        self.round_trips_us = []
        self.away = set()
        self._publishers = [None] * len(self.urls)
        self._turn = asyncio.Lock()
        self._stopping = False

    async def run(self, seconds):
        """Publish for ``seconds`` (``rate * seconds`` messages, at least one), or until :meth:`stop`."""
        loop = asyncio.get_running_loop()
        start = loop.time()
        total = max(1, int(round(self.rate * seconds)))
        try:
            while self.published < total and not self._stopping:
                number = self.published + 1
                async with self._turn:
                    await loop.run_in_executor(None, self._publish, number)
                self.published = number
                await asyncio.sleep(max(0.0, start + number / self.rate - loop.time()))
        finally:
            for index in range(len(self._publishers)):
                self._close(index)

    def stop(self):
        """End the feed after the message on its way, if one is."""
        self._stopping = True

    async def leave(self, index):
        """Publish nothing more to broker ``index`` (once the message on its way, if any, is answered)."""
        async with self._turn:
            self.away.add(index)
            self._close(index)

    def back(self, index):
        """Broker ``index`` takes its turns again, on a new connection."""
        self.away.discard(index)

    def _publish(self, number):
        body = payload.message(payload.FEED_ID, number, now_us())
        key = b"Idempotency-Key: feed-%d\r\n" % number if self.retry_s else b""
        first = time.monotonic()
        turn = number
        while True:
            began = time.monotonic()
            present = [index for index in range(len(self.urls)) if index not in self.away] or range(len(self.urls))
            index = present[turn % len(present)]
            try:
                self._connected(index).publish([body], headers=key)
                break
            except PublishFailed:
                if not self.retry_s or began - first > self.retry_s:
                    raise
                self.refused_at = self.refused_at or began
                self._close(index)
                time.sleep(RETRY_PAUSE_S)
                turn += 1
        self.round_trips_us.append(round((time.monotonic() - began) * 1e6))
        if self.refused_at is not None and self.back_at is None:
            self.back_at, self.resumed = time.monotonic(), number

    def _connected(self, index):
        """The publisher of broker ``index``, connected if it was not."""
        if self._publishers[index] is None:
            service = endpoints.target(self.urls[index])
            try:
                self._publishers[index] = Publisher(service.host, service.port, self.token,
                                                    ssl_context=tls_context.context_for(service))
            except OSError as error:
                raise PublishFailed("POST /publish: cannot connect to %s: %s" % (
                    service.netloc, error.strerror or error)) from None
        return self._publishers[index]

    def _close(self, index):
        if self._publishers[index] is not None:
            self._publishers[index].close()
            self._publishers[index] = None
