"""A batch of room messages and its wire forms, each built once for every subscriber of that form.

Rules this module keeps:

* A batch holds its messages' JSON texts (``encoded``, each encoded once, when
  published); every wire form of it is built from them on first use and kept,
  so that subscribers of one form share the same bytes.
* A wire form is a value of one of the types below, hashable (the room groups
  its subscribers by form) and named by what it builds:
  :data:`SOCKJS_WEBSOCKET` (one websocket frame carrying ``a[...]``),
  :data:`RAW_WEBSOCKET` (a websocket frame per message, the plain
  ``/websocket``), :class:`Streamed` (the ``a[...]`` frame as a stream of a
  transport carries it, chunked or not), :class:`Positioned` (another form,
  every message in its position envelope, :mod:`broker.protocol.positions`) and
  :class:`InRoom` (another form, every message tagged with its room, for a
  session of several rooms, :mod:`broker.protocol.room_names`; within
  :class:`Positioned`, never around it: ``Positioned(InRoom(name, inner))``).
  A batch is one room's: its tagged form is built once, whichever sessions of
  that room take it.
  None is the batch itself, for a session's queue (the polling transports,
  and streams between two requests), which frames what it holds when a
  request takes it.
* No I/O, no clock: the room (:mod:`broker.core.hub`) makes batches and asks
  for forms; the transports write them.
"""

from typing import NamedTuple, Optional

from broker.protocol import frames, positions, room_names


class WebSocketFrames(NamedTuple):
    """A websocket's form: SockJS's ``a[...]`` in one frame (``sockjs``), or one frame per message."""

    sockjs: bool

    def of(self, batch):
        return batch.sockjs_websocket if self.sockjs else batch.raw_websocket


SOCKJS_WEBSOCKET = WebSocketFrames(True)
RAW_WEBSOCKET = WebSocketFrames(False)


class Streamed(NamedTuple):
    """A stream's form: the ``a[...]`` frame in the framing of ``transport`` (a key of
    :data:`broker.protocol.frames.STREAM_FRAMINGS`), in an HTTP chunk of its own if ``chunked``."""

    transport: str
    chunked: bool

    def of(self, batch):
        return batch.streamed(self)


class Positioned(NamedTuple):
    """The form of a subscriber with positions: the ``inner`` form (None: the
    batch itself), every message in its envelope."""

    inner: Optional[NamedTuple]

    def of(self, batch):
        return batch.positioned.form(self.inner)


class InRoom(NamedTuple):
    """The form of a session of several rooms in room ``name``: the ``inner`` form (None: the
    batch itself), every message saying its room (:func:`broker.protocol.room_names.tag`)."""

    name: str
    inner: Optional[NamedTuple]

    def of(self, batch):
        return batch.in_room(self.name).form(self.inner)


class Batch:
    """Messages flushed together; each wire form is built once, when first asked for.

    ``encoded`` holds each message's JSON text, ``raw`` its UTF-8 bytes as the
    raw websocket sends it (a string as itself, any other value as JSON),
    derived from ``encoded`` when not given. ``offsets`` holds the room
    messages' offsets; an announcement after them has none. ``lead``: the
    JSON text that opens the positioned form (a connection's start). ``key``:
    the conflating key of its one message, or None. ``enveloped``: its texts are
    position envelopes (its :attr:`positioned` form), not messages.
    """

    __slots__ = ("encoded", "offsets", "lead", "key", "_raw", "_sockjs_body", "_sockjs_frame", "_sockjs_websocket",
                 "_raw_websocket", "_streamed", "_positioned", "enveloped", "_in_room")

    def __init__(self, encoded, raw=None, offsets=(), lead=None, key=None):
        self.encoded = encoded
        self.offsets = offsets
        self.lead = lead
        self.key = key
        self._raw = raw
        self._sockjs_body = None
        self._sockjs_frame = None
        self._sockjs_websocket = None
        self._raw_websocket = None
        self._streamed = None
        self._positioned = None
        self.enveloped = False
        self._in_room = None

    def __len__(self):
        return len(self.encoded)

    def picked(self, indexes):
        """The batch of this one's messages at ``indexes``."""
        encoded, raw, offsets = self.encoded, self._raw, self.offsets
        return Batch([encoded[i] for i in indexes], None if raw is None else [raw[i] for i in indexes],
                     [offsets[i] for i in indexes])

    def with_announcement(self, encoded):
        """This batch with the JSON text ``encoded`` after its messages."""
        raw = None if self._raw is None else self._raw + [frames.raw_message(encoded)]
        return Batch(self.encoded + [encoded], raw, self.offsets, self.lead)

    def form(self, form):
        """This batch in ``form``, a wire form (see the module's rules), or itself for None."""
        return self if form is None else form.of(self)

    @property
    def positioned(self):
        """This batch with every message in its position envelope, and its lead first."""
        if self._positioned is None:
            encoded = self.encoded
            texts = [positions.message(offset, text) for offset, text in zip(self.offsets, encoded)]
            texts += [positions.announcement(text) for text in encoded[len(texts):]]
            if self.lead is not None:
                texts.insert(0, self.lead)
            self._positioned = Batch(texts)
            self._positioned.enveloped = True
        return self._positioned

    def in_room(self, name):
        """This batch of room ``name`` with every text tagged with its room (:class:`InRoom`)."""
        tagged = self._in_room
        if tagged is None or tagged[0] != name:
            enveloped = self.enveloped
            tagged = self._in_room = (name, Batch([room_names.tag(name, text, enveloped) for text in self.encoded]))
        return tagged[1]

    @property
    def raw(self):
        if self._raw is None:
            self._raw = [frames.raw_message(e) for e in self.encoded]
        return self._raw

    @property
    def sockjs_body(self):
        """The encoded messages joined by commas: the inside of ``a[...]``."""
        if self._sockjs_body is None:
            self._sockjs_body = ",".join(self.encoded)
        return self._sockjs_body

    @property
    def sockjs_frame(self):
        """The SockJS ``a[...]`` frame."""
        if self._sockjs_frame is None:
            self._sockjs_frame = frames.message_frame(self.sockjs_body)
        return self._sockjs_frame

    @property
    def sockjs_websocket(self):
        """One websocket frame carrying the SockJS ``a[...]`` frame."""
        if self._sockjs_websocket is None:
            self._sockjs_websocket = frames.websocket_frame(self.sockjs_frame.encode())
        return self._sockjs_websocket

    @property
    def raw_websocket(self):
        """One websocket frame per message, unwrapped (the raw ``/websocket`` endpoint)."""
        if self._raw_websocket is None:
            self._raw_websocket = b"".join(frames.websocket_frame(r) for r in self.raw)
        return self._raw_websocket

    def streamed(self, form):
        """The ``a[...]`` frame as a :class:`Streamed` ``form`` carries it
        (:func:`broker.protocol.frames.stream_frame`)."""
        if self._streamed is None:
            self._streamed = {}
        elif form in self._streamed:
            return self._streamed[form]
        data = self._streamed[form] = frames.stream_frame(form.transport, self.sockjs_frame, form.chunked)
        return data
