"""Where the room's Redis is: one server's URL, or Sentinels that name the primary.

Rules this module keeps:

* ``--redis`` is a URL redis-py reads (``redis://``, ``rediss://``,
  ``unix://``), or ``redis+sentinel://[:PASSWORD@]HOST:PORT[,HOST:PORT...]/NAME[/DB]``:
  the Sentinels to ask, the name of the primary they watch (``sentinel
  monitor NAME ...``), its database, and the password of the primary and its
  replicas (Sentinels themselves are asked without one).
* A text is read once, at start (:func:`parse`), and refused with what is
  wrong: no Sentinel, a port out of range, no primary's name. A refusal never
  repeats the password: it goes to the journal.
* With Sentinels, every new connection asks them for the primary: after a
  failover the broker's next connection reaches the new one
  (:func:`connect`, redis-py's own Sentinel support). A Sentinel that does
  not answer within the reply timeout is skipped for the next.
* redis-py is imported only when a broker connects, never to read a flag.
"""

import re
import urllib.parse
from typing import NamedTuple, Optional, Tuple

SENTINEL_SCHEME = "redis+sentinel"
_URL = re.compile(r"^(rediss?|unix)://\S+$")
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")
_CREDENTIALS = re.compile(r"(?<=://)[^/@]*@")


class RedisAddress(NamedTuple):
    """A parsed ``--redis``: ``url`` for one server, or ``sentinels`` (``(host, port)``
    pairs) with the ``primary``'s name, its ``db`` and ``password``."""

    url: Optional[str] = None
    sentinels: Tuple[Tuple[str, int], ...] = ()
    primary: Optional[str] = None
    db: int = 0
    password: Optional[str] = None

    @property
    def has_sentinels(self):
        return bool(self.sentinels)


def parse(text):
    """The :class:`RedisAddress` of ``text``; raises ValueError saying what is wrong,
    the URL quoted with its credentials masked."""
    try:
        return _parse(text)
    except ValueError as error:
        raise ValueError(_CREDENTIALS.sub("***@", str(error))) from None


def _parse(text):
    if text.startswith(SENTINEL_SCHEME + "://"):
        return _sentinels(text)
    if not _URL.match(text):
        raise ValueError("not a Redis URL: %r (try redis://127.0.0.1:6379/0 or "
                         "redis+sentinel://127.0.0.1:26379,127.0.0.1:26380/mymaster)" % text)
    try:
        urllib.parse.urlsplit(text).port
    except ValueError as error:
        raise ValueError("not a Redis URL: %r (%s)" % (text, error)) from None
    return RedisAddress(url=text)


def _sentinels(text):
    rest = text[len(SENTINEL_SCHEME) + 3:]
    credentials, _, rest = rest.rpartition("@")
    hosts, _, path = rest.partition("/")
    password = urllib.parse.unquote(credentials.partition(":")[2]) or None if credentials else None
    sentinels = tuple(_host_port(part, text) for part in hosts.split(","))
    primary, _, db = path.partition("/")
    if not _NAME.match(primary):
        raise ValueError("%r names no primary: add /NAME, the name its Sentinels monitor" % text)
    if db and not db.isdigit():
        raise ValueError("%r: the database after the primary's name is a number, not %r" % (text, db))
    return RedisAddress(sentinels=sentinels, primary=primary, db=int(db or 0), password=password)


def _host_port(part, text):
    try:
        split = urllib.parse.urlsplit("//" + part)
        port = split.port
    except ValueError as error:
        raise ValueError("%r: a Sentinel's address %r (%s)" % (text, part, error)) from None
    if not split.hostname or port is None:
        raise ValueError("%r: a Sentinel's address is HOST:PORT, not %r" % (text, part))
    return split.hostname, port


def connect(address, reply_timeout_s, **options):
    """A ``redis.asyncio.Redis`` for ``address``, given redis-py's ``options``:
    the primary's, through its Sentinels, each asked within ``reply_timeout_s``."""
    import redis.asyncio
    from redis.asyncio.sentinel import Sentinel

    if not address.has_sentinels:
        return redis.asyncio.from_url(address.url, **options)
    asking = {"socket_timeout": reply_timeout_s, "socket_connect_timeout": reply_timeout_s,
              "retry": options.get("retry")}
    sentinel = Sentinel(list(address.sentinels), sentinel_kwargs=asking)
    return sentinel.master_for(address.primary, db=address.db, password=address.password, **options)
