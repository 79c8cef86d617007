"""The unit tier: tests of logic, without sockets or processes, in seconds.

``tox -e fast`` runs this folder alone. Every test here is held to it: one
that connects or binds a socket, or starts a process, fails at once with
:class:`StartsIO`, and belongs beside the end-to-end suites instead. (An
event loop's own socket pair is allowed: it neither binds nor connects.)
"""

import asyncio
import multiprocessing.process
import os
import socket
import subprocess

import pytest


class StartsIO(AssertionError):
    """A unit test reached for the network or a process."""


def _refuse(what):
    def refuse(*args, **kwargs):
        raise StartsIO("a unit test may not %s: move it out of tests/unit" % what)
    return refuse


@pytest.fixture(autouse=True)
def no_sockets_or_processes(monkeypatch):
    for method in ("connect", "connect_ex", "bind"):
        monkeypatch.setattr(socket.socket, method, _refuse("use a socket (%s)" % method))
    monkeypatch.setattr(socket.socket, "sendto", _refuse("use a socket (sendto)"))
    monkeypatch.setattr(subprocess.Popen, "__init__", _refuse("start a process"))
    for name in ("fork", "system", "posix_spawn", "posix_spawnp"):
        if hasattr(os, name):
            monkeypatch.setattr(os, name, _refuse("start a process (os.%s)" % name))
    monkeypatch.setattr(asyncio, "create_subprocess_exec", _refuse("start a process"))
    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", _refuse("start a process"))
