"""Reading ``--redis``: one server's URL, or Sentinels and the primary they watch."""

import pytest

from broker.cluster.redis_address import RedisAddress, check, parse
from broker.config import parse_args


def test_a_servers_url_is_kept_as_it_is():
    assert parse("redis://127.0.0.1:6379/2") == RedisAddress(url="redis://127.0.0.1:6379/2")
    assert not parse("unix:///run/redis.sock").has_sentinels


def test_sentinels_name_the_primary_its_database_and_password():
    address = parse("redis+sentinel://:s%40cret@127.0.0.1:26379,[::1]:26380,sentinel.example:26381/room/3")
    assert address.sentinels == (("127.0.0.1", 26379), ("::1", 26380), ("sentinel.example", 26381))
    assert (address.primary, address.db, address.password) == ("room", 3, "s@cret")
    assert address.has_sentinels


def test_one_sentinel_without_a_database_is_enough():
    assert parse("redis+sentinel://127.0.0.1:26379/mymaster") == RedisAddress(
        sentinels=(("127.0.0.1", 26379),), primary="mymaster")


@pytest.mark.parametrize("text, says", [
    ("127.0.0.1:6379", "not a Redis URL"),
    ("redis+sentinel://127.0.0.1:26379", "names no primary"),
    ("redis+sentinel://127.0.0.1:26379/", "names no primary"),
    ("redis+sentinel://127.0.0.1/room", "a Sentinel's address is HOST:PORT"),
    ("redis+sentinel://127.0.0.1:26379,/room", "a Sentinel's address is HOST:PORT"),
    ("redis+sentinel://127.0.0.1:99999/room", "a Sentinel's address"),
    ("redis+sentinel://127.0.0.1:26379/room/zero", "the database after the primary's name is a number"),
])
def test_what_is_wrong_is_said(text, says):
    with pytest.raises(ValueError, match=says):
        parse(text)


def test_the_flag_refuses_a_bad_address_and_defaults_the_replicas_by_it(capsys):
    with pytest.raises(SystemExit):
        parse_args(["--redis", "redis+sentinel://127.0.0.1:26379"], environ={})
    assert "names no primary" in capsys.readouterr().err
    config = parse_args(["--redis", "redis+sentinel://127.0.0.1:26379/room"], environ={})
    assert config.redis_min_replicas is None
    assert parse_args(["--redis-min-replicas", "2"], environ={}).redis_min_replicas == 2
    with pytest.raises(SystemExit):
        parse_args(["--redis-min-replicas", "17"], environ={})


@pytest.mark.parametrize("text", [
    "redis://:s3cret@127.0.0.1:99999/0",
    "rediss://user:s3cret@127.0.0.1:port/0",
    "redis+sentinel://:s3cret@127.0.0.1:26379/",
    "redis+sentinel://:s3cret@127.0.0.1:26379/mymaster/x",
    "redis+sentinel://:s3cret@127.0.0.1/mymaster",
] + ["%s:s3%scret@%s" % (scheme, odd, rest) for odd in "/@:?#" for scheme, rest in (
    ("redis://", "127.0.0.1:99999/0"), ("rediss://user", "127.0.0.1:6379/zero"),
    ("unix://", "/run/redis.sock?db=x"), ("redis+sentinel://", "127.0.0.1:26379/"))] + [
    "redis://127.0.0.1:99999/0?password=s3@cret", "redis+sentinel://127.0.0.1:26379/m?password=s3@cret",
    "rediss://127.0.0.1:6379/zero?password=s3/cre?t"])
def test_a_refused_url_is_quoted_without_its_password(text):
    """Nor any part of it, whatever character of a URL it holds, in its credentials or its query."""
    with pytest.raises(ValueError) as refused:
        parse(text)
    refusal = str(refused.value)
    assert "s3" not in refusal and "cret" not in refusal and "***" in refusal, refusal


def test_a_password_in_the_query_may_hold_an_at():
    assert parse("redis://127.0.0.1:6379/0?password=s3@cret").url == "redis://127.0.0.1:6379/0?password=s3@cret"


@pytest.mark.parametrize("text, says", [
    ("redis://:pa/ss@127.0.0.1:6379/0", "an @ past the host: write a / ? # or @ of the password as %2F"),
    ("redis://127.0.0.1:6379/zero", "the database after the host is a number"),
    ("unix:///run/redis.sock?db=zero", "?db= is a number"),
    ("redis://127.0.0.1:6379/0?Socket-Timeout=1", "not an option's name after ?"),
])
def test_what_redis_py_would_read_otherwise_is_refused(text, says):
    """redis-py would take the first as a host named ":pa", the second as database 0,
    and raise the last two as the broker connects. A password's / is written %2F."""
    assert parse("redis://:pa%2Fss@127.0.0.1:6379/0").url == "redis://:pa%2Fss@127.0.0.1:6379/0"
    with pytest.raises(ValueError) as refused:
        parse(text)
    assert says in str(refused.value)


@pytest.mark.parametrize("query, says", [
    ("db=1&socket_timeout=soon", "Invalid value for 'socket_timeout'"),
    ("sockettimeout=5", "unexpected keyword argument 'sockettimeout'"),
    ("socket_timeout=nan", "?socket_timeout= is a number of seconds more than 0"),
    ("socket_connect_timeout=-1", "?socket_connect_timeout= is a number of seconds more than 0"),
])
def test_redis_py_reads_the_options_as_the_broker_starts(query, says):
    """Not as it connects, where the first two were a traceback, and the last two had every
    command time out."""
    check(parse("redis://127.0.0.1:6379/0?socket_timeout=2.5&health_check_interval=10"))
    with pytest.raises(ValueError) as refused:
        check(parse("redis://:s3cret@127.0.0.1:6379/0?" + query))
    assert says in str(refused.value) and "s3cret" not in str(refused.value), str(refused.value)
