"""SockJS and RFC 6455 on the wire, without I/O: frames, the handshake, close codes."""
