"""docs/sizing.rst states the worst cases of what the room keeps and sends as the code's constants
make them: the history, the cluster's stream, a script transport's literal. A constant changed
and the page not, or the other way round, fails here."""

import os
import re

from checkout import ROOT

from broker.cluster.backplane import STREAM_MAXLEN
from broker.config import DEFAULTS
from broker.protocol import frames

MiB = 1024 * 1024


def sizing():
    with open(os.path.join(ROOT, "docs", "sizing.rst")) as f:
        return re.sub(r"\s+", " ", f.read())


def figure(number):
    """``number`` as the page writes it: 62.5, 2.25, 625, 147,464 (whole bytes, rounded down)."""
    return "%g" % number if number < 1000 else "{:,}".format(int(number))


def test_the_history_and_the_stream_hold_their_count_of_messages_at_the_limit_as_kept():
    page = sizing()
    history = DEFAULTS.history * DEFAULTS.max_message_size / MiB
    assert "(%s MiB with the defaults" % figure(history) in page
    assert "about %s entries" % figure(STREAM_MAXLEN) in page
    assert "about %s MiB with the defaults" % figure(STREAM_MAXLEN * DEFAULTS.max_message_size / MiB) in page
    assert "%s KiB by default" % figure(DEFAULTS.max_message_size / 1024) in page


def test_a_script_literal_grows_a_frame_as_the_code_bounds_it():
    page = sizing()
    frame = DEFAULTS.max_message_size + len("a[]")
    assert "at most %s x (M + 3) + 2" % figure(frames.SCRIPT_STRING_GROWTH) in page
    assert "%s bytes for a %s KiB message" % (figure(frames.SCRIPT_STRING_GROWTH * frame + 2),
                                               figure(DEFAULTS.max_message_size / 1024)) in page
