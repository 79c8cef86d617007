"""Launch a server under test as a child process and learn where it listens.

Every server the project starts follows one contract: it accepts ``--port 0``, binds an
ephemeral port and prints ``listening on http(s)://HOST:PORT/PREFIX`` as soon as it accepts
connections (:func:`launch` waits for that line). SIGTERM stops it; a broker first drains
(``--drain-seconds``), and a second SIGTERM ends that at once (:func:`stop_process`). A server
that has exited can be started again on its port (:meth:`LaunchedServer.started_again`).
"""

import os
import re
import signal
import socket
import subprocess
import threading
import time
import urllib.parse

from loadtest.errors import LoadTestError

_LISTENING = re.compile(r"listening on (https?://\S+)")
# The broker's flags whose values are secrets (its Flag table's ``secret=True``): a command line is
# shown with their values hidden, as a failed start shows it on the terminal and in CI logs.
SECRET_FLAGS = ("--publish-token", "--admin-token", "--token-secret")
HIDDEN = "<hidden>"
# Seconds a server may take to exit after one SIGTERM before it is sent a second.
DRAIN_GRACE = 1.0


class ServerError(LoadTestError):
    """The server exited or stayed silent before it was listening."""


def shown_command(argv):
    """``argv`` as one line to show, each of :data:`SECRET_FLAGS`' values (``--flag V`` or ``--flag=V``) hidden."""
    shown = []
    for word in argv:
        name, equals, _ = word.partition("=")
        if shown and shown[-1] in SECRET_FLAGS:
            word = HIDDEN
        elif equals and name in SECRET_FLAGS:
            word = name + "=" + HIDDEN
        shown.append(word)
    return " ".join(shown)


class LaunchedServer:
    """A running server process: its ``url`` (SockJS prefix), ``pid``, output, and how :func:`launch` started it."""

    def __init__(self, process, url, output, reader, argv=(), options=None):
        self.process = process
        self.url = url
        self._output = output
        self._reader = reader
        self.argv = list(argv)
        self.options = dict(options or {})

    @property
    def pid(self):
        return self.process.pid

    @property
    def output(self):
        """Everything the process printed so far (stdout and stderr merged)."""
        return "".join(self._output)

    def stop(self, timeout=5.0):
        """:func:`stop_process`, then close its output: the exit code."""
        stop_process(self.process, timeout)
        return self._ended()

    def terminate(self, timeout, signum=signal.SIGTERM):
        """One SIGTERM (or ``signum``) and up to ``timeout`` s for the process to exit: its exit code, or None."""
        if self.process.poll() is None:
            self.process.send_signal(signum)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                return None
        return self._ended()

    def _ended(self):
        self._reader.join(1.0)
        self.process.stdout.close()
        return self.process.returncode

    def started_again(self):
        """This exited one started again as it was, on its port: a :class:`LaunchedServer`."""
        port = urllib.parse.urlsplit(self.url).port
        return launch(on_port(self.argv, port), **self.options)


def on_port(argv, port):
    """``argv`` with its ``--port`` value set to ``port`` (added if it has none)."""
    argv = list(argv)
    for at in range(len(argv) - 2, -1, -1):
        if argv[at] == "--port":
            argv[at + 1] = str(port)
            return argv
    return argv + ["--port", str(port)]


# How many fresh ports a server that lost the one picked for it is started on, in all.
BIND_ATTEMPTS = 5


def free_port():
    """A loopback port nothing listens on now (another process may bind it first: a server that
    lost it starts again on a fresh one, BIND_ATTEMPTS times in all)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_process(process, timeout=5.0):
    """SIGTERM to a child ``process`` still running; a second after DRAIN_GRACE seconds (a broker
    then ends its drain); SIGKILL once ``timeout`` seconds have passed."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(min(DRAIN_GRACE, timeout))
        return
    except subprocess.TimeoutExpired:
        pass
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(max(0.0, timeout - DRAIN_GRACE))
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def launch(argv, cpu=None, env=None, cwd=None, timeout=20.0):
    """Start ``argv``, pinned to ``cpu`` by ``taskset`` (the same pid), with ``env`` added to this
    environment (None: left out): a :class:`LaunchedServer` once it prints its listening line."""
    given, options = list(argv), dict(cpu=cpu, env=env, cwd=cwd, timeout=timeout)
    if cpu is not None:
        argv = ["taskset", "-c", str(cpu)] + list(argv)
    full_env = dict(os.environ)
    full_env.update(env or {})
    full_env = {name: value for name, value in full_env.items() if value is not None}
    full_env.setdefault("PYTHONUNBUFFERED", "1")
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                               env=full_env, cwd=cwd, text=True, bufsize=1)
    output = []
    found = threading.Event()
    url = []

    def pump():
        for line in process.stdout:
            output.append(line)
            if not found.is_set():
                match = _LISTENING.search(line)
                if match:
                    url.append(match.group(1).rstrip("/"))
                    found.set()

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    deadline = time.monotonic() + timeout
    while not found.wait(0.05):
        exited = process.poll() is not None
        if exited or time.monotonic() > deadline:
            if not exited:
                process.kill()
            process.wait()
            reader.join(1.0)
            process.stdout.close()
            reason = "exited with code %s" % process.returncode if exited else "timed out after %g s" % timeout
            raise ServerError("%s %s before listening:\n%s" % (shown_command(argv), reason, "".join(output)))
    return LaunchedServer(process, url[0], output, reader, given, options)
