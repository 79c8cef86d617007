"""A burst of connection attempts on one asyncio loop: new sessions knocking, each answer read and dropped.

Rules:

- Attempt ``n`` of ``count`` is due ``n x seconds / count`` after the burst begins (a late loop
  starts every attempt due at once); its kind is :func:`loadtest.method.admission.kind_of` ``n``.
- Each attempt is a new TCP connection carrying one request, as a browser's first; only
  the answer's head is read (at most ``MAX_HEAD_BYTES``), then the connection is closed.
- Answers go to a :class:`loadtest.method.admission.Tally`, timed from the attempt's start; an
  attempt with no answer ``timeout`` seconds after the last one started is given up: the
  whole burst is bounded by ``seconds + timeout``.
"""

import asyncio
import time
from typing import NamedTuple, Tuple

from loadtest.client import tls_context
from loadtest.client.deliveries import failure_reason
from loadtest.client.http_sessions import request
from loadtest.framing import endpoints, websocket_frames
from loadtest.framing.http_head import HTTPError, parse_head
from loadtest.method import admission, rules

MAX_HEAD_BYTES = 16 * 1024
ANSWER_TIMEOUT_S = 10.0


class Burst(NamedTuple):
    """``count`` attempts on the SockJS service ``url`` over ``seconds``, from ``source_addresses`` in turn."""

    url: str
    count: int
    seconds: float
    source_addresses: Tuple[str, ...] = ()


def opening_request(url, kind):
    """The request of an attempt of ``kind`` (:data:`loadtest.method.admission.KINDS`) under the SockJS prefix ``url``."""
    service = endpoints.target(url)
    if kind == admission.WEBSOCKET:
        path = endpoints.endpoint_path(url, endpoints.WEBSOCKET)
        return websocket_frames.handshake_request(service.netloc, path, websocket_frames.new_key())
    if kind == admission.INFO:
        return request("GET", service.netloc, service.with_query(service.prefix + "/info"))
    return request("POST", service.netloc, service.with_query("%s/%s" % (endpoints.session_path(url), kind)))


class _Head(asyncio.Protocol):
    """Sends one request and settles ``answer`` with the head of the response (status line and headers)."""

    def __init__(self, data, answer):
        self.data = data
        self.answer = answer
        self.read = b""

    def connection_made(self, transport):
        transport.write(self.data)

    def data_received(self, data):
        self.read += data
        end = self.read.find(b"\r\n\r\n")
        if self.answer.done():
            return
        if end >= 0:
            self.answer.set_result(self.read[:end])
        elif len(self.read) > MAX_HEAD_BYTES:
            self.answer.set_exception(HTTPError("an answer with oversized headers"))

    def connection_lost(self, exc):
        if not self.answer.done():
            self.answer.set_exception(HTTPError("the connection closed before an answer"))


async def _attempt(url, kind, local, ssl_context, tally):
    loop = asyncio.get_running_loop()
    service = endpoints.target(url)
    answer = loop.create_future()
    transport = None
    started = time.monotonic()
    try:
        transport, _ = await loop.create_connection(lambda: _Head(opening_request(url, kind), answer),
                                                    service.host, service.port, local_addr=local, ssl=ssl_context)
        status, headers = parse_head(await answer)
    except asyncio.CancelledError:
        tally.error(kind, "timeout")
        raise
    except Exception as error:  # every failure is counted by its reason, never traced
        tally.error(kind, failure_reason(error))
        return None
    finally:
        if transport is not None:
            transport.close()
    answered = time.monotonic()
    tally.answer(kind, status, headers, (answered - started) * 1e6)
    return answered


async def burst(plan, start_at, timeout=ANSWER_TIMEOUT_S):
    """Make the attempts of ``plan`` from ``start_at`` (``time.monotonic()``): the Tally's figures with
    ``attempts``, ``sent_s`` (the last attempt's start) and ``window_s`` (the last answer; 0.0 without)."""
    url, count, seconds, source_addresses = plan
    tally = admission.Tally()
    ssl_context = tls_context.context_for(endpoints.target(url))
    await asyncio.sleep(max(0.0, start_at - time.monotonic()))
    started = time.monotonic()
    tasks = []
    rate = count / seconds
    while len(tasks) < count:
        due = rules.messages_due(time.monotonic() - started, rate, count)
        for n in range(len(tasks), due):
            tasks.append(asyncio.ensure_future(_attempt(url, admission.kind_of(n),
                                                        endpoints.source_address(source_addresses, n),
                                                        ssl_context, tally)))
        if len(tasks) < count:
            await asyncio.sleep(max(0.0, started + len(tasks) / rate - time.monotonic()))
    sent_s = time.monotonic() - started
    _, pending = await asyncio.wait(tasks, timeout=timeout)
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    answered = [task.result() for task in tasks if not task.cancelled() and task.result() is not None]
    return dict(tally.figures(), attempts=count, sent_s=round(sent_s, 3),
                window_s=round(max(answered) - started, 3) if answered else 0.0)
