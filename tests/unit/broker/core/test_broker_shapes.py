"""The broker's own shapes, told from every other message without a socket."""

import json

import pytest

from broker.core import counters
from broker.core.broker_shapes import in_broker_shape


@pytest.mark.parametrize("message", [
    counters.message("raised", "21.50"), {"counter": 1}, {"audience": 12}, {"x": 1, "audience": None},
    json.dumps(counters.message("raised", "1")), ' \n{"audience": 1}', '{"\\u0063ounter": "a"}',
    '{"counter": "a", "deep": ' + "[" * 100000 + "]" * 100000 + "}",  # too deep to read here
])
def test_the_broker_shapes_as_objects_and_as_texts(message):
    assert in_broker_shape(message)


@pytest.mark.parametrize("message", [
    "hello", "", "42", '["counter"]', '{"counter": 1', '{"data": {"counter": 1}}', "x{\"counter\": 1}",
    {"Counter": 1}, {"data": {"audience": 1}}, [{"counter": 1}], 7, None, True,
])
def test_what_only_looks_like_them_is_not_theirs(message):
    assert not in_broker_shape(message)
