"""Where Tornado meets clients: the SockJS router and sessions, HTTP transports, websockets, the listener."""
