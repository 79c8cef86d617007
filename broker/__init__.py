"""A SockJS broadcast broker: one room, every message to every connected client."""

__version__ = "0.1.0"
