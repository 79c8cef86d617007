"""Debian's ``redis-server`` as a child process on a free loopback port.

Rules:

- It listens on 127.0.0.1 only, on a port free when it starts, and is ready once it answers
  ``PING``; a restart keeps the port. One that lost its port as it first started starts on a
  fresh one, ``BIND_ATTEMPTS`` times in all.
- Without a directory it keeps nothing on disk; with one it writes an append-only file
  there, fsynced before each answer: a restart keeps every acknowledged write.
"""

import os
import shutil
import signal
import socket
import subprocess
import time

from loadtest.contenders.child_process import BIND_ATTEMPTS, ServerError, free_port, stop_process

REDIS_SERVER = shutil.which("redis-server", path=os.environ.get("PATH", "") + ":/usr/sbin:/usr/bin")
HOWTO = "redis-server is missing: apt-get install redis-server"


class RedisServer:
    """A running ``redis-server``: its ``url`` (``redis://127.0.0.1:PORT/0``), ``port`` and ``pid``."""

    def __init__(self, directory=None):
        if REDIS_SERVER is None:
            raise ServerError(HOWTO)
        persistence = (["--appendonly", "yes", "--appendfsync", "always", "--dir", str(directory)]
                       if directory else ["--appendonly", "no"])
        self.process = None
        for attempt in range(1, BIND_ATTEMPTS + 1):
            self.port = free_port()
            self.url = "redis://127.0.0.1:%d/0" % self.port
            self.argv = [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                         "--daemonize", "no", "--loglevel", "warning"] + persistence
            try:
                self.start()
                return
            except ServerError:
                status = self.process.poll()
                # Silent, and killed here (a signal's negative status): not a port lost.
                if attempt == BIND_ATTEMPTS or status is None or status <= 0:
                    raise

    @property
    def pid(self):
        return self.process.pid

    def start(self, timeout=10.0):
        """Start it (again, on the same port) and wait until it answers PING."""
        self.process = subprocess.Popen(self.argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while not self.answers():
            if self.process.poll() is not None:
                raise ServerError("redis-server exited with %s" % self.process.returncode)
            if time.monotonic() > deadline:
                self.kill()
                raise ServerError("redis-server silent after %.0f s" % timeout)
            time.sleep(0.01)

    def answers(self):
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as conn:
                conn.sendall(b"PING\r\n")
                return conn.recv(64) == b"+PONG\r\n"
        except OSError:
            return False

    def kill(self):
        """SIGKILL: Redis vanishes at once, as in a crash."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self):
        stop_process(self.process)
