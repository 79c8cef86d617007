"""The room as Redis holds it: its keys, the fields of a stream entry, and the scripts that change them.

Rules this module keeps:

* Every key of a room starts with its stream's (:func:`stream_key`): the
  stream, the room's epoch, its counters' hash, its audience's hash, and the
  two keys of its publishes' idempotency records.
* Idempotency records are bounded in count and in bytes: one hash holds each
  record under the digest of its key (:func:`broker.core.idempotency.digest`,
  whatever the key's length) with the time it expires, by Redis's clock, and
  a ``sequence`` field; a sorted set orders the digests by that sequence.
  Keeping one forgets, oldest first, those past
  :data:`broker.core.idempotency.MAX_KEYS` and the expired (a few each time);
  both keys expire a window after the last record kept (the longest window,
  where brokers are given different ones), so an idle room's records go. A Redis refusing writes for memory is given the oldest
  records before anything else (:mod:`broker.cluster.appends`).
* A stream entry holds a message's JSON text (:data:`FIELD`) and, for a
  message of a conflating key, that key (:data:`KEY_FIELD`).
* What must happen in one step happens in one script, which Redis runs
  atomically: an idempotent publish (:data:`PUBLISH_ONCE`), a counter's
  change with the entry that carries it (:data:`COUNT`), an audience report
  that reads the epoch back (:data:`AUDIENCE_REPORT`; many rooms' at once,
  :data:`AUDIENCES_REPORT`), a new epoch (:data:`NEW_EPOCH`).
* A script that finds an idempotency key seen writes it again as it was: a
  write, so that the WAIT after it (``--redis-min-replicas``) waits for the
  replicas to hold the record, whichever connection wrote it first. The backplane (:mod:`broker.cluster.backplane`)
  runs them; nothing here does I/O.
* A script never holds a number past what a Lua number (a double) holds
  exactly: a counter's total is read and written as Redis's integer text.
"""

from broker.core import counters

FIELD = b"m"
KEY_FIELD = b"k"
# The idempotency records' two functions, which the scripts that take an idempotency key begin
# with. ONCE_RECORDS, ONCE_ORDER: the keys of the records' hash and sorted set; ONCE_FIELD: the
# key's digest; ONCE_WINDOW_MS, ONCE_MOST: the window and the most records. seen() is the record
# kept, written again as it was (see the rules), or nil; keep() keeps one, and forgets the oldest
# past the most and, of the 8 oldest, those expired (see the rules).
_ONCE_FUNCTIONS = """
local function now_ms()
  local now = redis.call('TIME')
  return tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
end
local function seen()
  local kept = redis.call('HGET', ONCE_RECORDS, ONCE_FIELD)
  if not kept then return nil end
  local expires, record = string.match(kept, '^(%d+) (.*)$')
  if tonumber(expires) <= now_ms() then return nil end
  redis.call('HSET', ONCE_RECORDS, ONCE_FIELD, kept)
  return record
end
local function keep(record)
  local now = now_ms()
  redis.call('HSET', ONCE_RECORDS, ONCE_FIELD, (now + tonumber(ONCE_WINDOW_MS)) .. ' ' .. record)
  redis.call('ZADD', ONCE_ORDER, redis.call('HINCRBY', ONCE_RECORDS, 'sequence', 1), ONCE_FIELD)
  local over = redis.call('ZCARD', ONCE_ORDER) - tonumber(ONCE_MOST)
  local gone = {}
  for _, field in ipairs(redis.call('ZRANGE', ONCE_ORDER, 0, math.max(over, 8) - 1)) do
    local kept = redis.call('HGET', ONCE_RECORDS, field)
    if #gone >= over and kept and tonumber(string.match(kept, '^%d+')) > now then break end
    gone[#gone + 1] = field
  end
  if #gone > 0 then
    redis.call('ZREM', ONCE_ORDER, unpack(gone))
    redis.call('HDEL', ONCE_RECORDS, unpack(gone))
  end
  for _, key in ipairs({ONCE_RECORDS, ONCE_ORDER}) do
    redis.call('PEXPIRE', key, ONCE_WINDOW_MS, 'NX')
    redis.call('PEXPIRE', key, ONCE_WINDOW_MS, 'GT')
  end
end
"""
# How a script appends an entry (the field names and texts after the stream's key and MAXLEN):
# XADD alone in the default room; a named room's scripts append otherwise (broker.cluster.named_rooms).
APPEND_TO_STREAM = """
local function append(stream, maxlen, ...)
  return redis.call('XADD', stream, 'MAXLEN', '~', maxlen, '*', ...)
end
"""

# KEYS[1]: the idempotency records' hash, KEYS[2]: the stream, KEYS[3]: the records' sorted set;
# ARGV: the record to keep (the answer but the id; "" for no idempotency key), the message, the
# stream's MAXLEN, the window in ms, the conflating key or "", the key's digest, the most records.
# Returns {1, id} when appended, {0, record} when the key was seen.
_PUBLISH_ONCE_HEAD = """
local ONCE_RECORDS, ONCE_ORDER, ONCE_FIELD = KEYS[1], KEYS[3], ARGV[6]
local ONCE_WINDOW_MS, ONCE_MOST = ARGV[4], ARGV[7]
"""
_PUBLISH_ONCE_BODY = """
if ARGV[1] ~= '' then
  local record = seen()
  if record then return {0, record} end
end
local id
if ARGV[5] == '' then
  id = append(KEYS[2], ARGV[3], 'm', ARGV[2])
else
  id = append(KEYS[2], ARGV[3], 'm', ARGV[2], 'k', ARGV[5])
end
if ARGV[1] ~= '' then keep(ARGV[1] .. ' ' .. id) end
return {1, id}
"""
# KEYS[1]: the idempotency records' hash, KEYS[2]: the stream, KEYS[3]: the counters hash, KEYS[4]:
# the records' sorted set; ARGV: the operation (add, max), the counter's name, the amount in
# millionths (an integer's text), its scale, the text of its message before the total, the
# stream's MAXLEN, the record to keep ("" for no idempotency key), the window in ms, the message's
# conflating key, the most counters, the most digits of a total in millionths, the refusals' texts
# (too many, too big), the idempotency key's digest, the most records.
# The hash holds for counter NAME: v:NAME its total in millionths, s:NAME its scale, o:NAME
# and m:NAME the id and the text of its latest message. Returns {status, text} (see
# broker.core.counters: APPENDED, UNCHANGED, SEEN, REFUSED).
_COUNT_HEAD = """
local ONCE_RECORDS, ONCE_ORDER, ONCE_FIELD = KEYS[1], KEYS[4], ARGV[14]
local ONCE_WINDOW_MS, ONCE_MOST = ARGV[8], ARGV[15]
"""
_COUNT_BODY = """
local record = ARGV[7]
if record ~= '' then
  local kept = seen()
  if kept then return {'seen', kept} end
end
local hash, name, amount = KEYS[3], ARGV[2], ARGV[3]
local total = redis.call('HGET', hash, 'v:' .. name)
if not total and redis.call('HLEN', hash) >= 4 * tonumber(ARGV[10]) then return {'refused', ARGV[12]} end
local scale = tonumber(redis.call('HGET', hash, 's:' .. name) or '0')
local function digits(text) return (string.gsub(text, '^-', '')) end
local function greater(a, b)
  local a_negative, b_negative = string.sub(a, 1, 1) == '-', string.sub(b, 1, 1) == '-'
  if a_negative ~= b_negative then return b_negative end
  local x, y = digits(a), digits(b)
  if x == y then return false end
  local longer = #x > #y or (#x == #y and x > y)
  if a_negative then return not longer end
  return longer
end
local function shown(units, decimals)
  local negative = string.sub(units, 1, 1) == '-'
  local text = digits(units)
  text = string.rep('0', 7 - #text) .. text
  local shown_text = (string.gsub(string.sub(text, 1, #text - 6), '^0+(%d)', '%1'))
  if decimals > 0 then shown_text = shown_text .. '.' .. string.sub(text, #text - 5, #text - 6 + decimals) end
  if negative then shown_text = '-' .. shown_text end
  return shown_text
end
local after
if ARGV[1] == 'add' then
  redis.call('HINCRBY', hash, 'v:' .. name, amount)
  after = redis.call('HGET', hash, 'v:' .. name)
  if #digits(after) > tonumber(ARGV[11]) then
    if total then redis.call('HSET', hash, 'v:' .. name, total) else redis.call('HDEL', hash, 'v:' .. name) end
    return {'refused', ARGV[13]}
  end
elseif greater(amount, total or '0') then
  after = amount
  redis.call('HSET', hash, 'v:' .. name, after)
else
  local kept = (redis.call('HGET', hash, 'o:' .. name) or '0-0') .. ' ' .. shown(total or '0', scale)
  if record ~= '' then keep(record .. ' ' .. kept) end
  return {'unchanged', kept}
end
scale = math.max(scale, tonumber(ARGV[4]))
local value = shown(after, scale)
local message = ARGV[5] .. value .. '"}'
local id = append(KEYS[2], ARGV[6], 'm', message, 'k', ARGV[9])
redis.call('HSET', hash, 's:' .. name, scale, 'o:' .. name, id, 'm:' .. name, message)
if record ~= '' then keep(record .. ' ' .. id .. ' ' .. value) end
return {'appended', id .. ' ' .. value}
"""


def publish_once(append=APPEND_TO_STREAM):
    """The text of :data:`PUBLISH_ONCE`, its entry appended by the Lua function ``append`` defines."""
    return _PUBLISH_ONCE_HEAD + append + _ONCE_FUNCTIONS + _PUBLISH_ONCE_BODY


def count(append=APPEND_TO_STREAM):
    """The text of :data:`COUNT`, its entry appended by the Lua function ``append`` defines."""
    return _COUNT_HEAD + append + _ONCE_FUNCTIONS + _COUNT_BODY


PUBLISH_ONCE = publish_once()
COUNT = count()
COUNTED_DIGITS = counters.MAX_INTEGER_DIGITS + counters.MAX_SCALE
# One audience hash's report: a field a broker, each holding "count:milliseconds" by Redis's
# clock. report() writes this broker's count and answers the total, and the brokers counted,
# of the fresh fields (those no older than stale_ms), forgetting the others.
_AUDIENCE_FUNCTION = """
local now = redis.call('TIME')
local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local function report(key, broker, count, stale_ms)
  redis.call('HSET', key, broker, count .. ':' .. now_ms)
  local total = 0
  local brokers = 0
  local fields = redis.call('HGETALL', key)
  for i = 1, #fields, 2 do
    local counted, at = string.match(fields[i + 1], '^(%d+):(%d+)$')
    if counted and now_ms - tonumber(at) <= stale_ms then
      total = total + tonumber(counted)
      brokers = brokers + 1
    else
      redis.call('HDEL', key, fields[i])
    end
  end
  redis.call('PEXPIRE', key, 10 * stale_ms)
  return {total, brokers}
end
"""
# KEYS[1]: the room's audience hash, KEYS[2]: its epoch; ARGV: this broker's id, its count, the
# staleness in ms. Returns {total, brokers, epoch}.
AUDIENCE_REPORT = _AUDIENCE_FUNCTION + """
local reported = report(KEYS[1], ARGV[1], ARGV[2], tonumber(ARGV[3]))
return {reported[1], reported[2], redis.call('GET', KEYS[2])}
"""
# Many rooms' reports in one call. KEYS: their audience hashes; ARGV: this broker's id, the
# staleness in ms, then its count of each room, in the order of KEYS. Returns their totals.
AUDIENCES_REPORT = _AUDIENCE_FUNCTION + """
local stale_ms = tonumber(ARGV[2])
local totals = {}
for i, key in ipairs(KEYS) do
  totals[i] = report(key, ARGV[1], ARGV[2 + i], stale_ms)[1]
end
return totals
"""
# KEYS[1]: the room's epoch; ARGV: the epoch a broker delivered in, a new one. A broker whose
# history the stream lost starts the new epoch, unless another broker started one already. The
# key keeps its expiry (a named room's), or none (the default room's). Returns the room's epoch.
NEW_EPOCH = """
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL') end
return redis.call('GET', KEYS[1])
"""


def stream_key(prefix):
    """The Redis key of the room served at ``prefix``."""
    return "sockjs-broker:" + prefix


def epoch_key(prefix):
    """The Redis key of the epoch of the room served at ``prefix``."""
    return stream_key(prefix) + ":epoch"


def counters_key(prefix):
    """The Redis key of the counters of the room served at ``prefix``."""
    return stream_key(prefix) + ":counters"


def once_records_key(prefix):
    """The Redis key of the hash of the idempotency records of the room served at ``prefix``
    (no key of the one-key-a-record form before it, ``:once:KEY``, can take its name)."""
    return stream_key(prefix) + ":idempotency"


def once_order_key(prefix):
    """The Redis key of the sorted set that orders those records by the sequence they were kept in."""
    return stream_key(prefix) + ":idempotency:order"


def audience_key(prefix):
    """The Redis key of the audience of the room served at ``prefix``."""
    return stream_key(prefix) + ":audience"


def latest_counters(fields):
    """Each counter's latest message in the counters hash's ``fields``: ``[(name, id, text), ...]``."""
    latest = []
    for field, text in fields.items():
        if field.startswith(b"m:"):
            name = field[2:]
            latest.append((name.decode(), fields[b"o:" + name].decode(), text.decode()))
    return latest


def keys_of(entries):
    """The conflating keys of stream ``entries``, or None when none has one."""
    if not any(KEY_FIELD in fields for _, fields in entries):
        return None
    return [fields[KEY_FIELD].decode() if KEY_FIELD in fields else None for _, fields in entries]


def written(reply):
    """What one entry's ``reply`` in a transaction says: an appended message's id; for
    :data:`PUBLISH_ONCE`, ``(True, id)``, or ``(False, "record id")`` when its key was seen;
    for :data:`COUNT`, ``(status, text)`` (a status of :mod:`broker.core.counters`)."""
    if type(reply) is bytes:
        return reply.decode()
    appended, text = reply
    if type(appended) is bytes:  # a counter's: its status' name
        return appended.decode(), text.decode()
    return bool(appended), text.decode()
