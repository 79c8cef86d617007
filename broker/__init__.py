"""A SockJS broadcast broker: one room, every message to every connected client."""

__version__ = "1.0.0"
