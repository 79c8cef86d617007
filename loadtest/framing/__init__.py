"""The load client's wire code without I/O: each transport's framing, the payload, the endpoints, the resuming subscriber.

Nothing here touches a socket, an event loop or a process (``.importlinter``'s
``loadtest-sans-io`` contract); :mod:`loadtest.client` moves the bytes.
"""
