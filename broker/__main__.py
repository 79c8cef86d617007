"""``python -m broker`` and the ``sockjs-broker`` command."""

from broker.ops import pypy_nursery


def main():
    pypy_nursery.exec_with_broker_nursery()
    from broker.app import main as run  # after the nursery: on PyPy this process may start anew

    run()


if __name__ == "__main__":
    main()
