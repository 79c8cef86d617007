"""``--procs N``: client groups in worker processes, driven from the sweep's loop.

A :class:`RemoteGroup` offers the interface of :class:`loadtest.client.connections.ClientGroup`
(``connect``, ``alive_count``, ``begin_step``, ``run_step``, ``take_sample``, ``close``); behind it a spawned process
runs a real ClientGroup and answers over a pipe. Histograms travel HDR-encoded. A worker
trusts what the process that started it trusts (:func:`loadtest.client.tls_context.trusted`).
"""

import asyncio
import dataclasses
import multiprocessing
import signal

from hdrh.histogram import HdrHistogram

from loadtest import affinity
from loadtest.client import connections, tls_context
from loadtest.errors import WorkerLost


def _worker(pipe, urls, transport, source_addresses, first_id, listen, cpu, trusted):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    tls_context.trust(trusted)
    if cpu is not None:
        affinity.pin(0, cpu)
    asyncio.run(_serve(pipe, urls, transport, source_addresses, first_id, listen))


async def _serve(pipe, urls, transport, source_addresses, first_id, listen):
    group = connections.ClientGroup(urls, transport, source_addresses, first_id, listen)
    loop = asyncio.get_event_loop()
    commands = asyncio.Queue()
    serving = asyncio.current_task()

    def receive():
        try:
            commands.put_nowait(pipe.recv())
        except (EOFError, OSError):
            loop.remove_reader(pipe.fileno())
            serving.cancel()

    loop.add_reader(pipe.fileno(), receive)
    try:
        while True:
            command = await commands.get()
            if command[0] == "connect":
                failures = await group.connect(command[1], lambda n: pipe.send(("opened", n)))
                pipe.send(("connected", failures, group.alive_count()))
            elif command[0] == "begin":
                await group.begin_step()
                pipe.send(("begun",))
            elif command[0] == "step":
                partial = await group.run_step(*command[1:])
                pipe.send(("step", dataclasses.replace(partial, histogram=partial.histogram.encode()),
                           group.alive_count()))
            elif command[0] == "sample":
                partial = await group.take_sample(command[1])
                pipe.send(("sample", dataclasses.replace(partial, histogram=partial.histogram.encode())))
            else:
                return
    except (asyncio.CancelledError, ConnectionError):
        return  # the sweep's process is gone: nobody to answer
    finally:
        loop.remove_reader(pipe.fileno())
        group.close()


class WorkerProcess:
    """A spawned process running ``target(pipe, *args)``, which answers what it is sent over
    the pipe: :meth:`ask` sends a command and :meth:`answer` awaits the next answer
    without holding the loop (WorkerLost if it has exited); :meth:`close` asks it to
    end, and kills it after 5 s."""

    def __init__(self, target, *args):
        context = multiprocessing.get_context("spawn")
        self._pipe, child = context.Pipe()
        self._process = context.Process(target=target, args=(child,) + args, daemon=True)
        self._process.start()
        child.close()

    async def ask(self, *command):
        """Send ``command`` (a tuple) and await its answer."""
        self._pipe.send(command)
        return await self.answer()

    async def answer(self):
        loop = asyncio.get_running_loop()
        ready = loop.create_future()
        loop.add_reader(self._pipe.fileno(), lambda: ready.done() or ready.set_result(None))
        try:
            await ready
        finally:
            loop.remove_reader(self._pipe.fileno())
        try:
            return self._pipe.recv()
        except (EOFError, OSError):
            raise WorkerLost("load worker %d exited (code %s)" % (self._process.pid, self._process.exitcode)) from None

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
    """A :class:`loadtest.client.connections.ClientGroup` in a spawned process, pinned to ``cpu``."""

    def __init__(self, urls, transport, source_addresses, first_id, cpu, listen=False):
        super().__init__(_worker, list(urls), transport, source_addresses, first_id, listen, cpu,
                         tls_context.trusted())
        self._alive = 0

    async def _reply(self, on_progress=None):
        while True:
            answer = await self.answer()
            if answer[0] != "opened":
                return answer
            if on_progress is not None:
                on_progress(answer[1])

    async def connect(self, count, on_progress=None):
        self._pipe.send(("connect", count))
        _, failures, self._alive = await self._reply(on_progress)
        return failures

    def alive_count(self):
        return self._alive

    async def begin_step(self):
        self._pipe.send(("begin",))
        await self._reply()

    async def run_step(self, to_send, duration, total_messages):
        self._pipe.send(("step", to_send, duration, total_messages))
        _, partial, self._alive = await self._reply()
        return dataclasses.replace(partial, histogram=HdrHistogram.decode(partial.histogram))

    async def take_sample(self, expected=None):
        self._pipe.send(("sample", expected))
        _, partial = await self._reply()
        self._alive = partial.alive
        return dataclasses.replace(partial, histogram=HdrHistogram.decode(partial.histogram))


def make_groups(urls, transport, source_addresses, level, procs, cpus=None, listen=False):
    """Up to ``procs`` groups sharing ``level`` connections to ``urls``: in this process when ``procs`` is 1.

    A worker with no connection would end every step at once, so there are never
    more workers than connections. Client ids run on from one worker to the
    next, so the connections of all workers together go to ``urls`` in turn.
    """
    if procs == 1:
        return [connections.ClientGroup(urls, transport, source_addresses, listen=listen)], [level]
    shares = shares_of(level, procs)
    groups = []
    first_id = 0
    for i, share in enumerate(shares):
        cpu = cpus[i % len(cpus)] if cpus else None
        groups.append(RemoteGroup(urls, transport, source_addresses, first_id, cpu, listen))
        first_id += share
    return groups, shares


async def connect_groups(groups, shares, on_progress=None):
    """Open ``shares[i]`` connections in ``groups[i]``, all groups at once; ``{reason: count}`` of the failures.

    ``on_progress(opened)`` gets the number opened so far, over all groups.
    """
    opened = [0] * len(groups)

    def track(index):
        def seen(count):
            opened[index] = count
            if on_progress is not None:
                on_progress(sum(opened))
        return seen

    results = await asyncio.gather(
        *(group.connect(share, track(i)) for i, (group, share) in enumerate(zip(groups, shares)))
    )
    return summed(results)


def shares_of(count, procs):
    """``count`` connections over at most ``procs`` processes, as evenly as they go: one
    share per process, and no process without a connection."""
    return [count // procs + (1 if i < count % procs else 0) for i in range(min(procs, count))]


def summed(failures):
    """One ``{reason: count}`` of the failures of several groups."""
    total = {}
    for part in failures:
        for reason, count in part.items():
            total[reason] = total.get(reason, 0) + count
    return total
