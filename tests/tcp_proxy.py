"""A TCP proxy of the tests' own, on loopback, between a broker and a real server (Redis).

It forwards both ways as it is; a test can make it hold (forward nothing either
way, its connections and new ones open, no FIN, no RST: a network partition or
a firewall's dropped state), refuse (every connection it holds cut, every new
one closed at once, as a restarted or unreachable server does), or slow what
the server sends to ``bytes_per_second``, so that a reply the broker waits on
arrives over seconds while the connection stays up.
Threads, plain sockets, nothing of the broker's.
"""

import socket
import threading
import time

from loadtest.contenders.child_process import free_port

POLL_S = 0.05


def cut(sock):
    """Close ``sock`` now. A close alone leaves the connection up while a pump's thread is
    blocked in ``recv`` on it (the kernel holds the socket for the call): nothing is sent to
    the peer until that call returns, seconds later. A shutdown ends the call and sends the FIN."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:  # not connected any more
        pass
    sock.close()


class TcpProxy:
    """Listens on ``127.0.0.1:port`` and forwards each connection to ``target_port``."""

    def __init__(self, target_port):
        self.target_port = target_port
        self.port = free_port()
        self.bytes_per_second = None
        self._refusing = False
        self._flowing = threading.Event()
        self._flowing.set()
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._sockets = set()
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self._listener.settimeout(POLL_S)
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self):
        return "redis://127.0.0.1:%d" % self.port

    def hold(self):
        """Forward nothing, either way, until :meth:`forward`; close nothing."""
        self._flowing.clear()

    def refuse(self):
        """Cut every connection, and close every new one at once, until :meth:`forward`."""
        with self._lock:
            self._refusing = True
            for sock in self._sockets:
                cut(sock)
            self._sockets.clear()

    def forward(self):
        """Take connections and forward again."""
        self._refusing = False
        self._flowing.set()

    def close(self):
        self._stopping.set()
        self._flowing.set()
        self.refuse()
        self._listener.close()

    def _accept(self):
        while not self._stopping.is_set():
            try:
                client, _ = self._listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            if self._refusing:
                client.close()
                continue
            server = socket.create_connection(("127.0.0.1", self.target_port))
            with self._lock:
                self._sockets.update((client, server))
            threading.Thread(target=self._pump, args=(client, server, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, True), daemon=True).start()

    def _pump(self, source, destination, from_server):
        try:
            while True:
                self._flowing.wait()
                data = source.recv(16384)
                if not data:
                    break
                self._flowing.wait()
                rate = self.bytes_per_second if from_server else None
                if rate is None:
                    destination.sendall(data)
                    continue
                for start in range(0, len(data), 4096):
                    chunk = data[start:start + 4096]
                    time.sleep(len(chunk) / rate)
                    destination.sendall(chunk)
        except OSError:
            pass
        finally:
            with self._lock:
                for sock in (source, destination):
                    self._sockets.discard(sock)
                    sock.close()
