"""Every number a client or an operator writes is read in ASCII digits, 0 to 9, and nothing
else: Python's ``int``, ``float``, ``Decimal``, ``str.isdigit`` and a regex's ``\\d`` all take
the digits of other scripts too (``٣`` as 3, ``５`` as 5, ``১২`` as 12), which nobody types
on purpose and which the documented formats do not allow."""

import pytest

from broker import config
from broker.cluster import redis_address
from broker.core import counters, origins
from broker.flags import parse_size
from broker.protocol.positions import offset_key

OTHER_SCRIPTS = ["٣", "５", "১২", "1٣.５", "٣.5", "-٣"]


@pytest.mark.parametrize("text", OTHER_SCRIPTS)
def test_an_amount_is_written_in_ascii_digits(text):
    with pytest.raises(ValueError, match="an amount is a decimal number"):
        counters.amount(text)


@pytest.mark.parametrize("text", ["٤١", "4١", "1700000000000-٣", "１-1", "²"])
def test_an_offset_is_written_in_ascii_digits(text):
    assert offset_key("41") == (41, 0) and offset_key("1700000000000-3") == (1700000000000, 3)
    with pytest.raises(ValueError, match="not an offset"):
        offset_key(text)


@pytest.mark.parametrize("text", ["https://example.com:٤٤٣", "http://example.com:８０"])
def test_an_origins_port_is_written_in_ascii_digits(text):
    with pytest.raises(ValueError, match="not an origin"):
        origins.normalize(text)


@pytest.mark.parametrize("flag, text", [
    ("--port", "٨٠٨٠"), ("--port", "８０８０"), ("--history", "১২"), ("--client-rate", "５"),
    ("--client-rate", "1٣.５"), ("--drain-seconds", "٣"), ("--max-buffer", "６４KiB"), ("--max-buffer", "64\u212aiB"),
    ("--max-connections", "٣"), ("--host", "127.0.0.１"),
    ("--port", "8_080"), ("--client-rate", "1_0"),  # int and float take underscores between digits
])
def test_a_flags_number_is_written_in_ascii_digits(flag, text, capsys):
    with pytest.raises(SystemExit):
        config.parse_args([flag, text], environ={})
    assert capsys.readouterr().err.startswith("python -m broker: error: argument %s: " % flag)


def test_sizes_take_ascii_digits_and_units_only():
    assert parse_size("64KiB") == 64 << 10
    for text in ("٦٤KiB", "64\u212aiB"):  # the Kelvin sign is a k to a case-blind regex
        with pytest.raises(Exception, match="not a size"):
            parse_size(text)


@pytest.mark.parametrize("text", [
    "redis://127.0.0.1:٦٣٧٩/0",  # Python 3.9's urllib reads that port as 6379
    "redis://127.0.0.1:6379/٣",  # redis-py reads that database as 3
    "unix:///run/redis.sock?db=٣",
    "redis://127.0.0.1:6379/0?socket_timeout=٣",
    "redis+sentinel://127.0.0.1:٢٦٣٧٩/mymaster",
    "redis+sentinel://127.0.0.1:26379/mymaster/٣",
])
def test_a_redis_urls_numbers_are_written_in_ascii_digits(text):
    """A password may hold any character: only what follows it is read as numbers."""
    assert redis_address.parse("redis://:p٣ss@127.0.0.1:6379/0").url == "redis://:p٣ss@127.0.0.1:6379/0"
    with pytest.raises(ValueError, match="ASCII|a number"):
        redis_address.parse(text)
