"""Load worker processes: how they share a level and how they end."""

import multiprocessing

from loadtest.client import workers


def test_a_worker_whose_parent_is_gone_exits():
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    process = context.Process(target=workers._worker,
                              args=(child, ["http://127.0.0.1:9/broadcast"], "sockjs", None, 0, False, None, None))
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
