"""The load client: each transport's framing without I/O, and the connections, workers and publisher that drive it."""
