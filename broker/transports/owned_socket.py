"""A client's socket once Tornado has let go of it: the write path every long-lived transport shares.

A websocket after its upgrade (:mod:`broker.transports.websocket`) and an
HTTP stream after its head (:mod:`broker.transports.streams`) live for
minutes or hours and, from then on, only write what the room broadcasts.
Tornado would keep, for each of them, a request handler, the request, its
HTTP connection and an IOStream; an :class:`OwnedSocket` keeps the socket,
its SockJS session and a backlog.

Rules this module keeps:

* Reading: one ``recv`` of at most READ_BUDGET bytes per readable event,
  handed to :meth:`OwnedSocket.received`; the end of the client's side
  closes the socket.
* Writing: everything goes out in the order written, through
  :meth:`OwnedSocket.write_batch` (bounded: the room's batches, this
  socket being the subscriber's :class:`broker.core.seams.Writer`) or
  :meth:`OwnedSocket.write_unbounded` (the session's own frames, even past
  the bound), until :meth:`OwnedSocket.write_last` (a close frame, the end
  of a body): what comes after it is dropped. What the kernel does not take
  waits in a :class:`broker.core.backlog.Backlog`, written with one
  ``sendmsg`` per writable event (over TLS, one ``send`` of the head:
  :mod:`broker.transports.tls`); a backlog over the router's
  ``max_buffer`` refuses more (the room drops the slow consumer), and one not
  emptied within ``write_timeout`` seconds of holding a message without a
  conflating key (or the last bytes, :meth:`OwnedSocket.write_last`) is
  dropped as a slow consumer too, from the room it was given as it was made,
  and its socket closed. A viewer late on
  nothing but a counter's values (each the latest of its key) and the
  session's own frames is waited for, its backlog held to one value per key
  (:mod:`broker.core.conflation`), unless it takes nothing at all for
  ``IDLE_TIMEOUTS`` write timeouts: then it is gone, and cut.
* Closing: :meth:`OwnedSocket.cut` closes at once. However it ends, the
  socket is closed and its connection released (event loop, connection
  limits, the router's list of those behind) at once, and the SockJS session
  is told on the next turn (:meth:`OwnedSocket.ended`), never from inside a
  broadcast.
"""

import asyncio
import socket
import ssl
import types

from sockjs.tornado.session import ConnectionInfo
from tornado.ioloop import IOLoop

from broker.core.backlog import Backlog
from broker.protocol.close_codes import SLOW_CONSUMER
from broker.transports import tls
from broker.transports.tls import WOULD_BLOCK

READ_BUDGET = 64 * 1024
# Write timeouts in which a client late on conflated values only may take nothing before it is cut.
IDLE_TIMEOUTS = 4
# sendmsg takes at most this many buffers (IOV_MAX is 1024 on Linux).
SENDMSG_BUFFERS = 512
# What the event loop watches a socket for (OwnedSocket._watching).
_READ = 1
_WRITE = 2
# What a session keeps of its request's cookies, arguments and headers once
# open: one shared, read-only empty mapping rather than three dicts each.
_NOTHING = types.MappingProxyType({})


def opening_info(request):
    """The connection info a session opens with, from its first ``request``
    (Tornado's): its address, arguments, headers and path, never its cookies,
    which no broker session reads and which cost Tornado a ``Morsel`` each to
    parse (a 60 KB ``Cookie`` header, about 70 ms of the event loop)."""
    return ConnectionInfo(request.remote_ip, _NOTHING, request.arguments, request.headers, request.path)


def lean_connection_info(info):
    """What an open session keeps of its request's ``info``: the address and
    path, not the headers, cookies and arguments (about 1 KB a session)."""
    return ConnectionInfo(info.ip, _NOTHING, _NOTHING, _NOTHING, info.path)


class OwnedSocket:
    """One client's socket, written to directly.

    ``router`` is the router (:class:`broker.transports.router.BrokerRouter`);
    ``release`` (or None) is called once the socket is closed. Subclasses say
    what the client's bytes mean (:meth:`received`) and what ending means for
    the session (:meth:`ended`), and may act once a backlog is written
    (:meth:`caught_up`) or the socket closed (:meth:`closed`).
    """

    __slots__ = ("router", "session", "_room", "_sock", "_send", "_fd", "_release", "_reading", "_watching",
                 "_backlog", "_unkeyed_queued", "_idle_timeouts", "_deadline", "_last_written", "_tls")

    def __init__(self, router, sock, release):
        self.router = router
        self.session = None
        # The room (a broker.core.hub.Hub, or None) that drops its session's connection when it is too slow.
        self._room = router.node.hub
        self._sock = sock
        # socket.socket.send, bound once: the write of every batch not queued.
        self._send = sock.send
        self._fd = sock.fileno()
        self._release = release
        self._reading = True
        self._watching = 0
        # What the kernel has not taken yet (a Backlog), or None.
        self._backlog = None
        # Messages without a key queued since the backlog began: the write timeout's business.
        self._unkeyed_queued = 0
        # Write timeouts passed with only conflated values waiting and nothing taken.
        self._idle_timeouts = 0
        self._deadline = None
        self._last_written = False
        self._tls = isinstance(sock, ssl.SSLSocket)
        if router.settings["disable_nagle"]:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:  # reset already: the first read or write finds out and closes
                pass
        self.watch()

    @property
    def is_open(self):
        return self._sock is not None

    @property
    def behind(self):
        """Whether bytes wait for the kernel to take them."""
        return self._backlog is not None

    def write_batch(self, data, key):
        """Send ``data`` (bytes), a batch in this connection's form, of a
        conflating ``key`` (None: none); False when the backlog is over the
        router's ``max_buffer`` (:meth:`broker.core.backlog.Backlog.offer`,
        which replaces the ``data`` still queued under ``key``). Once the last
        bytes are written (:meth:`write_last`), ``data`` is dropped."""
        if self._last_written:
            return True
        backlog = self._backlog
        if backlog is not None:
            if not backlog.offer(data, key, self.router.rules.max_buffer):
                return False
            if key is None:
                self._queued_unkeyed()
            return True
        try:
            sent = self._send(data)
        except WOULD_BLOCK:
            sent = 0
        except OSError:
            self.cut()
            return True
        if sent != len(data):
            self._fall_behind(memoryview(data)[sent:], 1 if key is None else 0)
        return True

    def write_answer(self, data):
        """Send ``data``, an HTTP answer (a poll's, a send's), whatever the
        backlog holds: all of it is due within ``write_timeout``, as a
        message is, however much of the backlog is conflated values."""
        if self._backlog is None:
            OwnedSocket.write_batch(self, data, None)
        elif not self._last_written:
            self._backlog.append(data)
            self._queued_unkeyed()

    def write_unbounded(self, data):
        """Send ``data``, or queue it behind the backlog whatever its size."""
        if self._last_written:
            return
        if self._backlog is not None:
            self._backlog.append(data)
        else:
            OwnedSocket.write_batch(self, data, None)  # this socket's, whatever a subclass adds to the room's
            self._unkeyed_queued = 0  # if it fell behind, on the session's own frame, not a message

    def write_last(self, data):
        """Send ``data``, whatever the backlog holds, and nothing after it (a
        close frame, an HTTP body's end); False if there was a last already or
        the socket is closed."""
        if self._last_written or self._sock is None:
            return False
        self.write_unbounded(data)
        self._last_written = True
        if self._backlog is not None:
            self._queued_unkeyed()  # a client told to end takes the end within a write timeout
        return self._sock is not None

    def unsent_bytes(self):
        return 0 if self._backlog is None else self._backlog.size

    def leave_session(self):
        """Stop being the SockJS session's handler."""
        if self.session is not None:
            self.session.remove_handler(self)
            self.session = None

    def pause_reading(self, paused):
        """Stop (or resume) watching the socket for reading."""
        self._reading = not paused
        self.watch()
        if not paused:
            self._read_pending_soon()

    def shutdown_writing(self):
        """Shut the socket for writing (closing it if that fails). Over TLS, the
        TCP side only: the TLS socket's own ``shutdown`` would drop its TLS state,
        and what the client sends next could not be read."""
        try:
            socket.socket.shutdown(self._sock, socket.SHUT_WR)
        except OSError:
            self.cut()

    # What subclasses say.

    def received(self, data):
        """Handle ``data`` read from the client."""
        raise NotImplementedError

    def ended(self):
        """On the turn after the socket closed: tell the session."""
        raise NotImplementedError

    def caught_up(self):
        """The backlog is written."""

    def closed(self):
        """The socket has just been closed: forget what else watches it."""

    # The event loop's side.

    def _read(self):
        data = self._receive(READ_BUDGET)
        if data is not None:
            self.received(data)
            self._read_pending_soon()

    def _receive(self, size, flags=0):
        """What one ``recv`` gives; None if nothing yet, or if the socket is
        closed (the client's end, an error), which cuts it."""
        try:
            data = self._sock.recv(size, flags)
        except WOULD_BLOCK:
            return None
        except OSError:
            self.cut()
            return None
        if not data:
            self.cut()
            return None
        return data

    def _read_pending_soon(self):
        """Bytes TLS has decrypted already are no event for the loop: read them on the next turn."""
        if self._tls and self._sock is not None and self._sock.pending():
            IOLoop.current().add_callback(self._read_pending)

    def _read_pending(self):
        if self._sock is not None and self._reading:
            self._read()

    def watch(self):
        """Have the event loop watch the socket for reading unless paused, for
        writing while behind, and for nothing once closed. Through asyncio's
        loop itself: Tornado's ``add_handler`` would keep a dict entry, a tuple
        and a set entry more per socket."""
        events = 0
        if self._sock is not None:
            events = (_READ if self._reading else 0) | (_WRITE if self._backlog is not None else 0)
        changed = events ^ self._watching
        if not changed:
            return
        self._watching = events
        loop = asyncio.get_running_loop()
        if changed & _READ:
            if events & _READ:
                loop.add_reader(self._fd, self._read)
            else:
                loop.remove_reader(self._fd)
        if changed & _WRITE:
            if events & _WRITE:
                loop.add_writer(self._fd, self._write_backlog)
            else:
                loop.remove_writer(self._fd)

    def _fall_behind(self, rest, unkeyed):
        self._backlog = Backlog()
        self._backlog.append(rest)
        self._unkeyed_queued = unkeyed
        self._idle_timeouts = 0
        self.router.behind.add(self)
        self._deadline = IOLoop.current().call_later(self.router.rules.write_timeout, self._timed_out)
        self.watch()

    def _write_backlog(self):
        backlog = self._backlog
        if backlog is None or self._sock is None:
            return
        try:
            if self._tls:
                sent = tls.send_backlog(self._sock, backlog.chunks)
            else:
                sent = self._sock.sendmsg(backlog.chunks[:SENDMSG_BUFFERS])
        except WOULD_BLOCK:
            return
        except OSError:
            self.cut()
            return
        if sent:
            self._idle_timeouts = 0
        backlog.written(sent)
        if not backlog.chunks:
            self._backlog = None
            self.router.behind.discard(self)
            IOLoop.current().remove_timeout(self._deadline)
            self._deadline = None
            self.watch()
            self.caught_up()

    def _queued_unkeyed(self):
        """A message without a key waits in the backlog: the first one since it
        began has a whole write timeout from now."""
        if not self._unkeyed_queued:
            loop = IOLoop.current()
            if self._deadline is not None:  # None while the timeout itself closes it
                loop.remove_timeout(self._deadline)
            self._deadline = loop.call_later(self.router.rules.write_timeout, self._timed_out)
        self._unkeyed_queued += 1

    def _timed_out(self):
        """Not caught up for ``write_timeout``: dropped, and cut, since its close
        frame would wait behind the rest; or, with nothing but conflated values
        waiting, given another ``write_timeout``, unless it took nothing for
        ``IDLE_TIMEOUTS`` of them."""
        if not self._unkeyed_queued:
            self._idle_timeouts += 1
            if self._idle_timeouts < IDLE_TIMEOUTS:
                self._deadline = IOLoop.current().call_later(self.router.rules.write_timeout, self._timed_out)
                return
        self._deadline = None
        if self.session is not None and self._room is not None:
            self._room.drop(self.session.conn, SLOW_CONSUMER)
        self.cut()

    def cut(self):
        """Close now, without waiting for the client (see the module's rules)."""
        sock = self._sock
        if sock is None:
            return
        self._sock = None
        self.watch()
        sock.close()
        loop = IOLoop.current()
        if self._release is not None:
            self._release()
        if self._deadline is not None:
            loop.remove_timeout(self._deadline)
        self._deadline = None
        self._backlog = None
        self.router.behind.discard(self)
        self.router.stats.on_conn_closed()
        self.closed()
        loop.add_callback(self.ended)
