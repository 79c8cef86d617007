"""A named room as Redis holds it: its keys, its channel, the scripts that publish in it, what they publish.

Rules this module keeps (the default room's are :mod:`broker.cluster.room_in_redis`, untouched:
its keys, its stream and its read loop are today's):

* Every key of room ``R`` served at ``PREFIX`` starts with ``sockjs-broker:PREFIX:room:{R}``
  (:func:`room_key`), which is also its pub/sub channel: the stream (``:stream``), its epoch,
  its counters' hash and its idempotency records' two keys. ``{R}`` is a Redis Cluster hash
  tag: a room's keys share a slot, so one script may touch them all. A room name never holds
  a brace (:mod:`broker.protocol.room_names`' alphabet).
* A publish in a named room is one script (:data:`PUBLISH` for a message without an
  idempotency key, :data:`PUBLISH_ONCE` for one with a key; :data:`COUNT` for a counter's
  change): the last two today's scripts (:func:`broker.cluster.room_in_redis.publish_once`,
  :func:`broker.cluster.room_in_redis.count`), and all three's entry appended by
  :data:`APPEND_AND_PUBLISH`: XADD (MAXLEN ~ the hub's history,
  at least :data:`STREAM_MAXLEN`), then PUBLISH on the room's channel ``PREV NEW KEY DATA``
  (:func:`published`): ``PREV`` the stream's newest id before the XADD (``0-0`` for none),
  ``NEW`` the entry's id, ``KEY`` ``-`` or the conflating key as ``LENGTH:KEY`` (its length in
  bytes), ``DATA`` the message's JSON text. Idempotency records and counters are the room's
  own, bounded as the default room's are.
* Every script sets the room's epoch if it has none (the epoch a broker gives, as a broker
  loading the tail would), reading it back in the same command (``SET NX GET``): its first
  write, which Redis refuses for memory before the script wrote anything. It answers the
  epoch after today's answer, so a ``POST /publish`` at a broker with no viewer of the room
  still answers the room's position; the idempotency record
  it keeps names that epoch too (a broker's own is not the room's until it loaded the room), so
  a retry at any broker is answered the room's position. It then sets every key
  of the room but the idempotency records (which keep their window) to expire
  :func:`expiry_ms` after this publish: a room nobody publishes in goes from Redis whole, its
  epoch and counters with its stream, and a broker resuming in it later finds another epoch
  (a ``gap``).
* Acknowledged means replicated, as in the default room: the scripts go in one transaction
  followed by one WAIT (:mod:`broker.cluster.room_writes`). Nothing here does I/O.
"""

from typing import NamedTuple, Optional

from broker.cluster import room_in_redis

# The least a named room's keys live after its last publish (see expiry_ms).
EXPIRY_S = 3600
# The least entries a named room's stream keeps (MAXLEN ~, trimmed by whole nodes of 100, so 100
# to 200): what a broker whose pub/sub connection was away reads back without a gap (100 s of a
# room at 1 message a second: more than a reconnect or a Sentinel failover takes), at about
# 15 KB a room of 90-byte messages (MEMORY USAGE): 10,000 busy rooms hold 150 MB in Redis.
STREAM_MAXLEN = 100
# Every named room's script begins with it: the room's channel, read by APPEND_AND_PUBLISH, and
# its epoch, set if the room has none (KEYS: the epoch's last; ARGV: the channel, the expiry in ms
# and an epoch, the last three).
_ROOM_HEAD = """
local ROOM_CHANNEL, ROOM_EXPIRY_MS, ROOM_EPOCH = ARGV[#ARGV - 2], ARGV[#ARGV - 1], ARGV[#ARGV]
local epoch = redis.call('SET', KEYS[#KEYS], ROOM_EPOCH, 'NX', 'GET') or ROOM_EPOCH
"""
# How a named room's scripts append an entry (see the module's rules), on ROOM_CHANNEL.
APPEND_AND_PUBLISH = """
local function append(stream, maxlen, ...)
  local _, message, _, key = ...
  local newest = redis.call('XREVRANGE', stream, '+', '-', 'COUNT', '1')[1]
  local id = redis.call('XADD', stream, 'MAXLEN', '~', maxlen, '*', ...)
  if key then key = #key .. ':' .. key else key = '-' end
  redis.call('PUBLISH', ROOM_CHANNEL, (newest and newest[1] or '0-0') .. ' ' .. id .. ' ' .. key .. ' ' .. message)
  return id
end
"""


def _expiring(first_room_key):
    """The Lua that sets the room's keys, KEYS from ``first_room_key`` on, to expire with the room."""
    return "for i = %d, #KEYS do redis.call('PEXPIRE', KEYS[i], ROOM_EXPIRY_MS) end\n" % first_room_key


def _in_room(script, first_room_key, record):
    """``script`` (today's, appending with :data:`APPEND_AND_PUBLISH`) for a named room: its
    KEYS then the room's keys that expire with it, from ``first_room_key`` on, the epoch's last;
    its ARGV then the channel, the expiry in ms, an epoch to set if the room has none; ARGV
    ``record`` its idempotency record, whose last word (an epoch) becomes the room's. Answers
    today's answer followed by the room's epoch."""
    return _ROOM_HEAD + """
if ARGV[%d] ~= '' then ARGV[%d] = (string.gsub(ARGV[%d], '%%S+$', epoch)) end
local function script()
%s
end
local answer = script()
%sanswer[#answer + 1] = epoch
return answer
""" % (record, record, record, script, _expiring(first_room_key))


# A message without an idempotency key, the one publish of most rooms: none of the records'
# functions nor their arguments, which Redis pays for at every call (a Lua closure each, and
# each argument made a Lua string). KEYS: the stream, the counters' hash, the epoch; ARGV: the
# message, the stream's MAXLEN, the conflating key or "", the channel, the expiry in ms, an
# epoch. Answers {1, id, epoch}, as PUBLISH_ONCE's appended.
PUBLISH = _ROOM_HEAD + APPEND_AND_PUBLISH + """
local id
if ARGV[3] == '' then
  id = append(KEYS[1], ARGV[2], 'm', ARGV[1])
else
  id = append(KEYS[1], ARGV[2], 'm', ARGV[1], 'k', ARGV[3])
end
""" + _expiring(1) + "return {1, id, epoch}\n"
# KEYS, ARGV as room_in_redis.PUBLISH_ONCE's, then KEYS: the stream again, the counters' hash,
# the epoch; ARGV: the channel, the expiry in ms, an epoch.
PUBLISH_ONCE = _in_room(room_in_redis.publish_once(APPEND_AND_PUBLISH), 4, 1)
# KEYS, ARGV as room_in_redis.COUNT's, then KEYS: the stream again, the counters' hash, the
# epoch; ARGV: the channel, the expiry in ms, an epoch.
COUNT = _in_room(room_in_redis.count(APPEND_AND_PUBLISH), 5, 7)


def expiry_ms(history_seconds):
    """How long a named room's keys live after its last publish: its history's age
    (``--history-seconds``), but at least :data:`EXPIRY_S`, so that a room's counters and epoch
    outlive a quiet spell (an hour without a publish), and never 0 (no age: that hour)."""
    return int(max(history_seconds, EXPIRY_S) * 1000)


def room_key(prefix, name):
    """The channel of room ``name`` served at ``prefix``, and the start of each of its keys."""
    return "sockjs-broker:%s:room:{%s}" % (prefix, name)


class RoomKeys(NamedTuple):
    """The Redis keys of one named room, and its channel (see the module's rules)."""

    channel: str
    stream: str
    epoch: str
    counters: str
    once_records: str
    once_order: str

    @classmethod
    def of(cls, prefix, name):
        """Room ``name``'s keys at ``prefix``."""
        key = room_key(prefix, name)
        return cls(key, key + ":stream", key + ":epoch", key + ":counters", key + ":idempotency",
                   key + ":idempotency:order")

    def of_publish(self):
        """The KEYS of :data:`PUBLISH` in this room."""
        return [self.stream, self.counters, self.epoch]

    def of_publish_once(self):
        """The KEYS of :data:`PUBLISH_ONCE` in this room."""
        return [self.once_records, self.stream, self.once_order, self.stream, self.counters, self.epoch]

    def of_count(self):
        """The KEYS of :data:`COUNT` in this room."""
        return [self.once_records, self.stream, self.counters, self.once_order, self.stream, self.counters,
                self.epoch]


class Published(NamedTuple):
    """What a script published on a room's channel: the stream's newest id before the entry
    (``prev``), the entry's (``new``), its conflating key's text (or None), its JSON text."""

    prev: str
    new: str
    key: Optional[str]
    encoded: str


def published(data):
    """The :class:`Published` a channel's message ``data`` (bytes) tells (see the module's rules)."""
    prev, new, rest = data.split(b" ", 2)
    if rest[:2] == b"- ":
        return Published(prev.decode(), new.decode(), None, rest[2:].decode())
    length, _, rest = rest.partition(b":")
    length = int(length)
    return Published(prev.decode(), new.decode(), rest[:length].decode(), rest[length + 1:].decode())


def answered(reply):
    """What one named room's script answered in a transaction: ``(written, epoch)``, ``written``
    as :func:`broker.cluster.room_in_redis.written` reads today's answer."""
    return room_in_redis.written(reply[:-1]), reply[-1].decode()
