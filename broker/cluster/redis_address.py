"""Where the room's Redis is: one server's URL, or Sentinels that name the primary.

Rules this module keeps:

* ``--redis`` is a URL redis-py reads (``redis://``, ``rediss://``,
  ``unix://``), or ``redis+sentinel://[:PASSWORD@]HOST:PORT[,HOST:PORT...]/NAME[/DB]``:
  the Sentinels to ask, the name of the primary they watch (``sentinel
  monitor NAME ...``), its database, and the password of the primary and its
  replicas (Sentinels themselves are asked without one).
* A text is read once, at start (:func:`parse`), and refused with what is
  wrong: no Sentinel, a port out of range, no primary's name, a database
  that is not a number, an ``@`` past the host (a password holding ``/``,
  ``?`` or ``#``, which must be percent-encoded), digits of another script
  than ASCII's. A refusal quotes the URL as :func:`shown` writes it, never
  the password, wherever it stands.
* What only redis-py knows, its options after ``?``, is checked by redis-py
  itself as the broker starts (:func:`check`), before it connects.
* With Sentinels, every new connection asks them for the primary: after a
  failover the broker's next connection reaches the new one
  (:func:`connect`, redis-py's own Sentinel support). A Sentinel that does
  not answer within the reply timeout is skipped for the next.
* redis-py is imported only when a broker connects, never to read a flag.
"""

import math
import re
import urllib.parse
from typing import NamedTuple, Optional, Tuple

SENTINEL_SCHEME = "redis+sentinel"
_SCHEMES = ("redis", "rediss", "unix", SENTINEL_SCHEME)
_NAME = re.compile(r"[A-Za-z0-9_.-]{1,100}")
_OPTION = re.compile(r"[a-z_]{1,100}")
_NUMBER = re.compile(r"[0-9]{1,9}")
_PORT = re.compile(r"[0-9]{1,5}")
_SPACE = re.compile(r"\s")
# What a refusal quotes of a URL: hosts (names, IPv4, [IPv6]) with their ports, comma-separated
# (Sentinels), and a path of names (a database, a primary's name, a Unix socket's file).
_SHOWN_PLACE = re.compile(r"(?:(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::[0-9]{1,5})?,?)*(?:/[A-Za-z0-9._-]*)*")
_EXAMPLES = "redis://127.0.0.1:6379/0 or redis+sentinel://127.0.0.1:26379,127.0.0.1:26380/mymaster"


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


def shown(text):
    """``text`` as a refusal quotes it: its scheme, and its hosts, ports and path only
    where they read as nothing else (:data:`_SHOWN_PLACE`); its credentials and its query
    (where redis-py takes a ``password=`` too) each written ``***``, and all of it past the
    scheme when a password's ``@``, ``?`` or ``/`` leaves where the host is in doubt;
    nothing of a text that is no URL."""
    scheme, separator, rest = text.partition("://")
    if not separator or scheme not in _SCHEMES:
        return "the text given"
    before_query, query, _ = rest.partition("?")
    credentials, at, place = before_query.rpartition("@")
    if not _SHOWN_PLACE.fullmatch(place):
        return "%s://***" % scheme
    return "%s://%s%s%s" % (scheme, "***@" if at else "", place, "?***" if query else "")


def parse(text):
    """The :class:`RedisAddress` of ``text``; raises ValueError saying what is wrong,
    the URL quoted as :func:`shown` writes it."""
    scheme, separator, rest = text.partition("://")
    if not separator or scheme not in _SCHEMES or not rest or _SPACE.search(text):
        raise ValueError("not a Redis URL (try %s)" % _EXAMPLES)
    if any(character.isdecimal() and not character.isascii() for character in rest.rpartition("@")[2]):
        raise ValueError("%s: digits are ASCII's 0 to 9" % shown(text))
    if scheme == SENTINEL_SCHEME:
        return _sentinels(text, rest)
    split = urllib.parse.urlsplit(text)
    if "@" in text.partition("?")[0] and "@" not in split.netloc:
        raise ValueError("%s: an @ past the host: write a / ? # or @ of the password as %%2F %%3F %%23 %%40"
                         % shown(text))
    if scheme != "unix":
        _port(split.netloc.rpartition("@")[2], text)
        if split.path not in ("", "/") and not _NUMBER.fullmatch(split.path[1:]):
            raise ValueError("%s: the database after the host is a number, such as /0" % shown(text))
    _query_options(split.query, text)
    return RedisAddress(url=text)


def _query_options(query, text):
    for name, value in urllib.parse.parse_qsl(query, keep_blank_values=True):
        if not _OPTION.fullmatch(name):
            raise ValueError("%s: not an option's name after ? (lower case letters and _; a ? of the "
                             "password is %%3F)" % shown(text))
        if name == "db" and not _NUMBER.fullmatch(value):
            raise ValueError("%s: ?db= is a number, such as ?db=0" % shown(text))


def _sentinels(text, rest):
    if "?" in rest:
        raise ValueError("%s: redis+sentinel:// takes no options after ? (a ? of the password is %%3F)"
                         % shown(text))
    credentials, _, rest = rest.rpartition("@")
    hosts, _, path = rest.partition("/")
    password = urllib.parse.unquote(credentials.partition(":")[2]) or None if credentials else None
    sentinels = tuple(_sentinel(part, text) for part in hosts.split(","))
    primary, _, db = path.partition("/")
    if not _NAME.fullmatch(primary):
        raise ValueError("%s names no primary: add /NAME, the name its Sentinels monitor" % shown(text))
    if db and not _NUMBER.fullmatch(db):
        raise ValueError("%s: the database after the primary's name is a number" % shown(text))
    return RedisAddress(sentinels=sentinels, primary=primary, db=int(db or 0), password=password)


def _port(part, text, whose="the"):
    """The port of ``part`` (``HOST:PORT``, ``[IPv6]:PORT``, ``HOST``: None): 1 to 5 ASCII
    digits, at most 65535; a refusal says it is ``whose`` port."""
    if part.endswith("]") or ":" not in part:
        return None
    port = part.rpartition(":")[2]
    if not _PORT.fullmatch(port) or int(port) > 65535:
        raise ValueError("%s: %s port is a number from 0 to 65535" % (shown(text), whose))
    return int(port)


def _sentinel(part, text):
    port = _port(part, text, "a Sentinel's address is HOST:PORT, and its")
    host = part.rpartition(":")[0].strip("[]")
    if not host or port is None:
        raise ValueError("%s: a Sentinel's address is HOST:PORT" % shown(text))
    return host, port


def check(address):
    """Raise ValueError, saying what is wrong, if redis-py would refuse the options of
    ``address``'s URL (after ``?``): their names and values, read as it reads them
    and given to a connection as it gives them, without connecting; or if a timeout
    among them is not a number of seconds more than 0 (nan or -1 would have every
    command time out, the backplane down with no setting named)."""
    if address.has_sentinels:
        return
    # redis-py's synchronous pool reads a URL as its asyncio pool does (one parse_url), and
    # needs no event loop to be made (the asyncio one does, on Python 3.9).
    from redis.connection import ConnectionPool
    from redis.exceptions import RedisError

    try:
        pool = ConnectionPool.from_url(address.url)
        pool.connection_class(**pool.connection_kwargs)
    except (TypeError, ValueError, RedisError) as error:
        raise ValueError("%s: %s" % (shown(address.url), error)) from None
    for name, value in pool.connection_kwargs.items():
        if isinstance(value, float) and not (math.isfinite(value) and value > 0):
            raise ValueError("%s: ?%s= is a number of seconds more than 0" % (shown(address.url), name))


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
