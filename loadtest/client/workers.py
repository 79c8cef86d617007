"""``--procs N``: client groups in worker processes, one worker loop for every kind of group.

Rules:

- A worker (:func:`serve`, the one worker loop) builds one group of its ``kind`` (a
  :class:`loadtest.client.connections.ClientGroup`, or a resuming group) from a
  :class:`loadtest.client.connections.GroupSpec` and answers its parent's pipe, one of the
  kind's ``COMMANDS`` at a time; an argument :data:`PROGRESS` becomes a function reporting
  how far the command got.
- A :class:`WorkerProcess` is the parent's side: each of the kind's ``COMMANDS`` is a coroutine
  of it, awaited without holding the loop (WorkerLost if the worker has exited).
- A worker trusts what its parent trusts, leaves Ctrl-C to it, and ends when it is gone.
"""

import asyncio
import collections
import functools
import inspect
import multiprocessing
import signal

from loadtest import affinity
from loadtest.client import connections, tls_context
from loadtest.errors import WorkerLost

# Among a command's arguments: a function reporting over the pipe, in the worker.
PROGRESS = "progress"
ANSWER = "answer"


def serve(pipe, kind, spec, cpu, trusted):
    """A worker process: a ``kind`` of group built from ``spec``, pinned to ``cpu``, doing what the pipe says."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    tls_context.trust(trusted)
    affinity.pin(0, cpu)
    asyncio.run(_serve(pipe, kind, spec))


async def _serve(pipe, kind, spec):
    group = kind(spec)

    def report(value):
        pipe.send((PROGRESS, value))

    try:
        while True:
            await _readable(pipe)
            command, *args = pipe.recv()
            if command == "close":
                return
            if command not in group.COMMANDS:
                raise ValueError("a %s does not %s" % (type(group).__name__, command))
            answer = getattr(group, command)(*(report if arg == PROGRESS else arg for arg in args))
            pipe.send((ANSWER, await answer if inspect.isawaitable(answer) else answer))
    except (EOFError, ConnectionError):
        return  # the parent is gone: nobody to answer
    finally:
        group.close()


async def _readable(pipe):
    """Until ``pipe`` has something to read (or has ended), without holding the loop."""
    loop = asyncio.get_running_loop()
    ready = loop.create_future()
    loop.add_reader(pipe.fileno(), lambda: ready.done() or ready.set_result(None))
    try:
        await ready
    finally:
        loop.remove_reader(pipe.fileno())


class WorkerProcess:
    """A spawned process serving a ``kind`` of group built from ``spec`` (:func:`serve`), pinned to ``cpu``."""

    def __init__(self, kind, spec, cpu=None):
        self.kind = kind
        self.spec = spec
        context = multiprocessing.get_context("spawn")
        self._pipe, child = context.Pipe()
        self._process = context.Process(target=serve, args=(child, kind, spec, cpu, tls_context.trusted()),
                                        daemon=True)
        self._process.start()
        child.close()

    async def ask(self, *command, on_progress=None):
        """Send ``command`` (name, arguments), await its answer; what the worker reports goes to ``on_progress``."""
        self._pipe.send(command)
        while True:
            await _readable(self._pipe)
            try:
                kind, value = self._pipe.recv()
            except (EOFError, OSError):
                raise WorkerLost("load worker %d exited (code %s)" % (
                    self._process.pid, self._process.exitcode)) from None
            if kind == ANSWER:
                return value
            if on_progress is not None:
                on_progress(value)

    def __getattr__(self, command):
        """One of the kind's ``COMMANDS``, as a coroutine function asking the worker."""
        kind = self.__dict__.get("kind")
        if kind is None or command not in kind.COMMANDS:
            raise AttributeError(command)
        return functools.partial(self.ask, command)

    def close(self):
        try:
            self._pipe.send(("close",))
        except OSError:
            pass
        self._process.join(5)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()
        self._pipe.close()


class RemoteGroup(WorkerProcess):
    """A :class:`loadtest.client.connections.ClientGroup` in a worker; ``alive_count``: as of its last answer."""

    def __init__(self, spec, cpu=None):
        super().__init__(connections.ClientGroup, spec, cpu)
        self._alive = 0

    async def connect(self, count, on_progress=None):
        failures = await self.ask("connect", count, PROGRESS, on_progress=on_progress)
        self._alive = await self.ask("alive_count")
        return failures

    def alive_count(self):
        return self._alive

    async def run_step(self, to_send, duration, total_messages):
        partial = await self.ask("run_step", to_send, duration, total_messages)
        self._alive = await self.ask("alive_count")
        return partial

    async def take_sample(self, expected=None):
        partial = await self.ask("take_sample", expected)
        self._alive = partial.alive
        return partial


def in_workers(kind, spec, procs, cpus):
    """``spec``'s clients in up to ``procs`` workers of ``kind`` groups, pinned to ``cpus`` in turn (none: anywhere)."""
    remote = RemoteGroup if kind is connections.ClientGroup else functools.partial(WorkerProcess, kind)
    return [remote(part, cpus[i % len(cpus)] if cpus else None) for i, part in enumerate(spec.spread(procs))]


def make_groups(spec, procs, cpus=()):
    """``spec``'s clients in one group in this process when ``procs`` is 1, else :func:`in_workers`."""
    if procs == 1:
        return [connections.ClientGroup(spec)]
    return in_workers(connections.ClientGroup, spec, procs, cpus)


async def connect_groups(groups, on_progress=None):
    """Open every group's clients at once: the failures; ``on_progress(opened)`` gets the number opened."""
    opened = [0] * len(groups)

    def track(index):
        def seen(count):
            opened[index] = count
            if on_progress is not None:
                on_progress(sum(opened))
        return seen

    return summed(await asyncio.gather(*(group.connect(group.spec.count, track(i)) for i, group in enumerate(groups))))


def summed(failures):
    """One ``{reason: count}`` of the failures of several groups."""
    total = collections.Counter()
    for part in failures:
        total.update(part)
    return dict(total)
