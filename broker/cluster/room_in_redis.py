"""The room as Redis holds it: its keys, the fields of a stream entry, and the scripts that change them.

Rules this module keeps:

* Every key of a room starts with its stream's (:func:`stream_key`): the
  stream, the room's epoch, its counters' hash, its audience's hash, and the
  idempotency keys of its publishes.
* A stream entry holds a message's JSON text (:data:`FIELD`) and, for a
  message of a conflating key, that key (:data:`KEY_FIELD`).
* What must happen in one step happens in one script, which Redis runs
  atomically: an idempotent publish (:data:`PUBLISH_ONCE`), a counter's
  change with the entry that carries it (:data:`COUNT`), an audience report
  that reads the epoch back (:data:`AUDIENCE_REPORT`), a new epoch
  (:data:`NEW_EPOCH`).
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

# KEYS[1]: the idempotency key, KEYS[2]: the stream; ARGV: the record to keep (the answer
# but the id), the message, the stream's MAXLEN, the window in ms, the conflating key or "".
# Returns {1, id} when appended, {0, record} when the key was seen.
PUBLISH_ONCE = """
local seen = redis.call('GET', KEYS[1])
if seen then
  redis.call('SET', KEYS[1], seen, 'KEEPTTL')
  return {0, seen}
end
local id
if ARGV[5] == '' then
  id = redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[3], '*', 'm', ARGV[2])
else
  id = redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[3], '*', 'm', ARGV[2], 'k', ARGV[5])
end
redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. id, 'PX', ARGV[4])
return {1, id}
"""
# KEYS[1]: the idempotency key (the stream's own when none), KEYS[2]: the stream, KEYS[3]: the
# counters hash; ARGV: the operation (add, max), the counter's name, the amount in millionths
# (an integer's text), its scale, the text of its message before the total, the stream's MAXLEN,
# the record to keep ("" for no idempotency key), the window in ms, the message's conflating key,
# the most counters, the most digits of a total in millionths, the refusals' texts (too many, too big).
# The hash holds for counter NAME: v:NAME its total in millionths, s:NAME its scale, o:NAME
# and m:NAME the id and the text of its latest message. Returns {status, text} (see
# broker.core.counters: APPENDED, UNCHANGED, SEEN, REFUSED).
COUNT = """
local record = ARGV[7]
if record ~= '' then
  local seen = redis.call('GET', KEYS[1])
  if seen then
    redis.call('SET', KEYS[1], seen, 'KEEPTTL')
    return {'seen', seen}
  end
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
  if record ~= '' then redis.call('SET', KEYS[1], record .. ' ' .. kept, 'PX', ARGV[8]) end
  return {'unchanged', kept}
end
scale = math.max(scale, tonumber(ARGV[4]))
local value = shown(after, scale)
local message = ARGV[5] .. value .. '"}'
local id = redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[6], '*', 'm', message, 'k', ARGV[9])
redis.call('HSET', hash, 's:' .. name, scale, 'o:' .. name, id, 'm:' .. name, message)
if record ~= '' then redis.call('SET', KEYS[1], record .. ' ' .. id .. ' ' .. value, 'PX', ARGV[8]) end
return {'appended', id .. ' ' .. value}
"""
COUNTED_DIGITS = counters.MAX_INTEGER_DIGITS + counters.MAX_SCALE
# KEYS[1]: the room's audience hash, KEYS[2]: its epoch; ARGV: this broker's id, its count, the
# staleness in ms. Each field holds "count:milliseconds" by Redis's clock; the total, and the
# brokers counted, are of the fresh ones. Returns {total, brokers, epoch}.
AUDIENCE_REPORT = """
local now = redis.call('TIME')
local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. ':' .. now_ms)
local total = 0
local brokers = 0
local fields = redis.call('HGETALL', KEYS[1])
for i = 1, #fields, 2 do
  local count, at = string.match(fields[i + 1], '^(%d+):(%d+)$')
  if count and now_ms - tonumber(at) <= tonumber(ARGV[3]) then
    total = total + tonumber(count)
    brokers = brokers + 1
  else
    redis.call('HDEL', KEYS[1], fields[i])
  end
end
redis.call('PEXPIRE', KEYS[1], 10 * tonumber(ARGV[3]))
return {total, brokers, redis.call('GET', KEYS[2])}
"""
# KEYS[1]: the room's epoch; ARGV: the epoch a broker delivered in, a new one. A broker whose
# history the stream lost starts the new epoch, unless another broker started one already.
# Returns the room's epoch.
NEW_EPOCH = """
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('SET', KEYS[1], ARGV[2]) end
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


def once_prefix(prefix):
    """What the Redis key of each idempotency key of the room served at ``prefix`` starts with."""
    return stream_key(prefix) + ":once:"


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
