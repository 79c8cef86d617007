"""``python -m broker`` and the ``sockjs-broker`` command."""

from broker.ops import pypy_environment


def main():
    pypy_environment.exec_with_broker_environment()
    from broker.app import main as run  # after the environment: on PyPy this process may start anew

    run()


if __name__ == "__main__":
    main()
