"""Load worker processes: how they share a level and how they end."""

import multiprocessing

from loadtest.client import connections, workers


def test_a_worker_whose_parent_is_gone_exits():
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    spec = connections.GroupSpec(["http://127.0.0.1:9/broadcast"], "sockjs")
    process = context.Process(target=workers.serve, args=(child, connections.ClientGroup, spec, None, None))
    process.start()
    child.close()
    parent.close()
    process.join(20)
    try:
        assert process.exitcode == 0
    finally:
        if process.is_alive():
            process.kill()
            process.join()
