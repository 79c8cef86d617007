"""The rooms' bounds the configuration, limits and sizing pages state are the code's: the flags'
defaults and refusals, the names' rule, how long an idle room lives in a broker and its keys in
Redis, the least a room's stream keeps, the idempotency keys' bound. A constant changed and a
page not, or the other way round, fails here."""

import re

import doc_blocks

from broker.app import IDLE_ROOM_S
from broker.cluster.named_rooms import EXPIRY_S, STREAM_MAXLEN
from broker.config import DEFAULTS
from broker.core.idempotency import MAX_KEYS
from broker.protocol import close_codes
from broker.protocol.room_names import ALPHABET, MAX_NAME


def read(name):
    with open(doc_blocks.page(name)) as f:
        return re.sub(r"\s+", " ", f.read())


def test_the_configuration_page_gives_the_rooms_flags_defaults_and_refusals():
    page = read("configuration")
    assert "``--max-rooms N`` (``BROKER_MAX_ROOMS``, %d by default" % DEFAULTS.max_rooms in page
    assert "``--max-session-rooms N`` (``BROKER_MAX_SESSION_ROOMS``, %d by default" % DEFAULTS.max_session_rooms in page
    assert '``c[%d,"%s"]``' % close_codes.TOO_MANY_ROOMS in page
    assert "opens with %d (its reason states the rule)" % close_codes.ROOM_REFUSED[0] in page
    assert "(%d s when that is 0)" % IDLE_ROOM_S in page


def test_the_limits_page_gives_the_names_rule_and_each_bound():
    page = read("limits")
    assert "1 to %d characters of ``%s``" % (MAX_NAME, ALPHABET) in page
    assert "(``--max-rooms``, {:,})".format(DEFAULTS.max_rooms) in page
    assert "more than ``--max-session-rooms`` (%d)" % DEFAULTS.max_session_rooms in page
    assert "(%d s when 0) is forgotten" % IDLE_ROOM_S in page
    assert "one window of at most {:,} keys".format(MAX_KEYS) in page
    assert "each room keeps at most {:,} records in Redis".format(MAX_KEYS) in page
    assert EXPIRY_S == 3600 and "expire an hour after its last publish" in page
    assert "at least %d (``MAXLEN ~``" % STREAM_MAXLEN in page


def test_the_sizing_page_gives_the_rooms_stream_and_expiry():
    page = read("sizing")
    assert "keeps ``--history`` entries, at least %d," % STREAM_MAXLEN in page
    assert EXPIRY_S == 3600 and "A room's keys go an hour after its last publish" in page
    assert "(%d s when 0) after its last use" % IDLE_ROOM_S in page
