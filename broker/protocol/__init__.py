"""SockJS and RFC 6455 on the wire, without I/O: frames, a batch's wire forms, the position envelope, polls and sends as bytes, the websocket protocol, close codes."""
