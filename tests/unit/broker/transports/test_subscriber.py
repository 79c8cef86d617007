"""The room's connections without sockets: what a closed one leaves behind."""

import gc
import platform
import types
import weakref

import pytest

from broker.core.hub import Hub
from broker.core.node import ClientRules, Node
from broker.transports.subscriber import BroadcastConnection


def session_of(transport, hub):
    """The parts of a sockjs-tornado session and of the router a connection
    reads as it opens: a polling or streaming handler (no prebuilt form)."""
    server = types.SimpleNamespace(node=Node(hub=hub), rules=ClientRules())
    return types.SimpleNamespace(server=server, handler=types.SimpleNamespace(), transport_name=transport,
                                 is_closed=False, write_batch=lambda batch, key: True)


@pytest.mark.skipif(platform.python_implementation() != "CPython", reason="reference counting is CPython's")
@pytest.mark.parametrize("query", [{}, {"positions": [b"1"]}], ids=["plain", "positions"])
def test_a_closed_streaming_or_polling_connection_goes_with_its_last_reference(query):
    """CPython's collector policy freezes the heap (broker.ops.gc_policy): a
    reference cycle among frozen objects outlives its connection until an
    audit. A closed connection must be freed by its reference count alone."""
    hub = Hub(lambda flush: None)
    connection = BroadcastConnection(session_of("xhr_streaming", hub))
    connection.on_open(types.SimpleNamespace(arguments=query))
    assert hub.by_transport["xhr_streaming"] == 1
    connection.on_close()
    gone = weakref.ref(connection)
    enabled = gc.isenabled()
    gc.disable()
    try:
        del connection
        assert gone() is None, "a closed connection is held by a reference cycle: %s" % (
            [type(referrer).__name__ for referrer in gc.get_referrers(gone())],)
    finally:
        if enabled:
            gc.enable()
