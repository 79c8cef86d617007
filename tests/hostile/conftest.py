"""Every broker a hostile-client test starts must end it without a traceback in its log."""

import pytest

pytest.register_assert_rewrite("probes")


@pytest.fixture
def start_broker(start_broker):
    started = []

    def start(*flags, **kwargs):
        broker = start_broker(*flags, **kwargs)
        started.append(broker)
        return broker

    yield start
    for broker in started:
        assert "Traceback" not in broker.server.output, broker.server.output[-4000:]
