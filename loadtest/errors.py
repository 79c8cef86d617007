"""The load client's exceptions, under one root: :class:`LoadTestError`.

Rules:

- A failure the load client means to report is a LoadTestError whose message is short and
  readable (shown on the terminal, written to results files); any other exception is a bug.
- Library code raises; only the commands turn an error into an exit status.
- The sockets' own OSError and asyncio.TimeoutError pass through where they happen;
  :func:`loadtest.client.deliveries.failure_reason` names them.
"""


class LoadTestError(Exception):
    """The root of every failure the load client reports."""


class ConnectError(LoadTestError):
    """A connection did not open, or the server broke the protocol; ``reason`` is short and readable."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason


class ServerGone(LoadTestError):
    """The server under test died or stopped accepting connections: the run cannot go on."""


class WorkerLost(LoadTestError):
    """A load worker process exited unexpectedly."""


class Interrupted(LoadTestError):
    """Ctrl-C: a command stops measuring and keeps what it has written."""
