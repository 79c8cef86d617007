"""The one module that touches private names of Tornado and sockjs-tornado.

Rules this module keeps:

* No other module of the broker names a private attribute or method of either
  library, nor overrides one (``tests/broker/test_internals.py`` checks every
  module against the libraries' classes).
* Each private name is used behind a function or mixin named for what it
  does; a test drives each one on real library objects and fails with the
  name an upgrade removed.
* Public API is used wherever it does the job; what is here has none
  (Tornado 6.4 to 6.6, sockjs-tornado 1.0.7).
"""

import asyncio

from tornado import iostream, websocket

from broker import frames

# One websocket connection reads at most this many bytes per event-loop
# iteration, each read counting READ_COST more, since small frames cost more
# per byte than large ones.
READ_BUDGET = 64 * 1024
READ_COST = 512


def unsent_bytes(stream):
    """Bytes ``stream`` (a Tornado IOStream) holds that the kernel has not
    taken yet; 0 once it is closed (Tornado drops its buffer then)."""
    buffer = stream._write_buffer
    return 0 if buffer is None else len(buffer)


def forget_cookies(request):
    """Drop the cookies ``request`` parsed (Tornado keeps them for the request's life)."""
    request.__dict__.pop("_cookies", None)


def close_after_response(request):
    """Close the connection once the response to ``request`` is finished, even
    if the client asked for keep-alive."""
    request.connection._disconnect_on_finish = True


def attach_session(handler, session_id):
    """Attach a polling or streaming ``handler`` to its SockJS session, creating
    it if new; False when the session refused (it has sent its close frame)."""
    return handler._attach_session(session_id)


def detach(handler):
    """Detach a websocket ``handler`` from its SockJS session."""
    handler._detach()


class GetOnly:
    """Mixin for websocket handlers: any other method answers a bare 405
    (Tornado's websocket handler would answer it as a failed upgrade). A
    websocket still open when the broker exits ends quietly: Tornado 6.5 keeps
    the handler's task waiting for it, and the cancelled task was logged as an
    error, one traceback per connection."""

    async def _execute(self, transforms, *args, **kwargs):
        if self.request.method == "GET":
            try:
                await super()._execute(transforms, *args, **kwargs)
            except asyncio.CancelledError:
                pass
            return
        self._transforms = transforms
        self.set_status(405)
        self.set_header("Allow", "GET")
        self.clear_header("Content-Type")
        self.finish()


class _GuardedProtocol(websocket.WebSocketProtocol13):
    """Tornado's websocket protocol with three guards it lacks:

    * it yields to the event loop once it has read READ_BUDGET (Tornado 6.5
      reads a connection for as long as it has data, so one flooding client
      held the loop; 6.6 yields every 256 KiB);
    * a frame header that breaks RFC 6455 for a client (unmasked, or a
      reserved opcode) closes the connection with 1002 at once, instead of
      waiting for the payload it announces;
    * once the connection is closed, no frame it had sent is read.
    """

    _read_work = 0
    _at_header = False

    async def _receive_frame(self):
        self._at_header = True
        await super()._receive_frame()

    async def _read_bytes(self, n):
        if self.stream.closed():
            # Tornado would go on parsing what it has buffered from a
            # connection the broker has cut (a flooder: up to 64 KiB of frames).
            raise iostream.StreamClosedError()
        data = await super()._read_bytes(n)
        if self._at_header:
            self._at_header = False
            violation = frames.client_header_violation(data)
            if violation:
                self.close(1002, violation)
                raise iostream.StreamClosedError()
        self._read_work += n + READ_COST
        if self._read_work >= READ_BUDGET:
            self._read_work = 0
            await asyncio.sleep(0)
        return data


def guard(protocol):
    """``protocol`` (Tornado's protocol for a new websocket, or None), made to
    read at most READ_BUDGET bytes per event-loop iteration and to refuse
    frames no client may send."""
    if protocol is not None:
        protocol.__class__ = _GuardedProtocol
    return protocol
