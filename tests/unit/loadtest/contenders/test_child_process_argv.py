"""A server started again gets the port it had: its command line with ``--port`` set to it."""

from loadtest.contenders.child_process import on_port


def test_the_last_port_flag_gets_the_port():
    assert on_port(["python", "-m", "broker", "--port", "0", "--redis", "u"], 8123) == [
        "python", "-m", "broker", "--port", "8123", "--redis", "u"]
    assert on_port(["b", "--port", "0", "--port", "1"], 9) == ["b", "--port", "0", "--port", "9"]


def test_a_command_without_a_port_gets_one():
    assert on_port(["b", "--host", "127.0.0.1"], 9) == ["b", "--host", "127.0.0.1", "--port", "9"]
    assert on_port(["b", "--port"], 9) == ["b", "--port", "--port", "9"]
