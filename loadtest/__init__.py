"""Round-trip latency load tests for SockJS broadcast servers."""
