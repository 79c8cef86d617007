"""Round-trip latency load tests for SockJS broadcast servers.

It measures any SockJS server, so it runs without the broker's server stack:
of the broker it imports only :mod:`broker.protocol.frames`, :mod:`broker.flags` and
:mod:`broker.runtime` (standard library only), and Tornado and
sockjs-tornado only in :mod:`loadtest.contenders.stock_sockjs_tornado`, the stock contender it launches
(``.importlinter`` holds the contract, tests/test_without_server_stack.py the proof).
"""

__version__ = "1.0.0"
