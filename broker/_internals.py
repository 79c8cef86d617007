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


def unsent_bytes(stream):
    """Bytes ``stream`` (a Tornado IOStream) holds that the kernel has not taken yet."""
    return len(stream._write_buffer)


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
    (Tornado's websocket handler would answer it as a failed upgrade)."""

    async def _execute(self, transforms, *args, **kwargs):
        if self.request.method == "GET":
            await super()._execute(transforms, *args, **kwargs)
            return
        self._transforms = transforms
        self.set_status(405)
        self.set_header("Allow", "GET")
        self.clear_header("Content-Type")
        self.finish()
