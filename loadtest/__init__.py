"""Round-trip latency load tests for SockJS broadcast servers."""

__version__ = "0.1.0"
