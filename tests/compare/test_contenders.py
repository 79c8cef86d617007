"""Each contender starts under the launch contract and broadcasts to every connection."""

import os

import pytest
import websocket

from loadtest.contenders import child_process, registry


def raw_websocket(url):
    return websocket.create_connection(url.replace("http://", "ws://", 1) + "/websocket", timeout=5)


@pytest.mark.parametrize("name", ["sockjs-tornado", "sockjs-node", "sockjs-go"])
def test_contender_broadcasts_to_every_connection(name):
    contender = registry.resolve(name)
    server = child_process.launch(contender.argv, cwd=contender.cwd)
    try:
        assert server.url.startswith("http://127.0.0.1:") and server.url.endswith("/broadcast")
        # A connection is in the room once its own message comes back: sockjs-go runs a
        # session's handler only after it has answered the handshake.
        sender = raw_websocket(server.url)
        sender.send("sender joined")
        assert sender.recv() == "sender joined"
        listener = raw_websocket(server.url)
        listener.send("listener joined")
        assert listener.recv() == "listener joined"
        assert sender.recv() == "listener joined"
        sender.send("hello from %s" % name)
        assert listener.recv() == "hello from %s" % name
        assert sender.recv() == "hello from %s" % name
        sender.close()
        listener.close()
    finally:
        assert server.stop() is not None


def test_runtimes_are_named():
    assert registry.resolve("sockjs-node").runtime.startswith("Node ")
    assert registry.resolve("sockjs-tornado").runtime.startswith("CPython 3.")
    assert registry.resolve("sockjs-go").runtime.startswith("Go 1.")


def test_missing_go_says_how_to_get_it(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(registry.Unavailable) as missing:
        registry.resolve("sockjs-go")
    assert "apt-get install golang-go" in str(missing.value)


def test_a_go_build_that_fails_says_what_go_printed(monkeypatch, tmp_path):
    monkeypatch.setattr(registry, "GO_DIR", str(tmp_path))
    monkeypatch.setattr(registry, "GO_BINARY", str(tmp_path / "bin" / "sockjs-go"))
    with pytest.raises(registry.Unavailable) as failed:
        registry.resolve("sockjs-go")
    assert str(failed.value).startswith("sockjs-go: go build failed:\ngo: ")


def test_missing_pypy_says_how_to_get_it(monkeypatch, tmp_path):
    monkeypatch.setattr(registry, "PYPY_CANDIDATES", (str(tmp_path / "bin" / "python"),))
    with pytest.raises(registry.Unavailable) as missing:
        registry.resolve("broker-pypy")
    assert "pypy3 -m venv .venv-pypy" in str(missing.value)


def test_a_contender_that_cannot_import_its_server_is_unavailable():
    with pytest.raises(registry.Unavailable) as missing:
        registry.cpython("no_such_module_here")
    assert "cannot import no_such_module_here" in str(missing.value)


def test_an_interpreter_that_is_not_cpython_is_passed_over(tmp_path, monkeypatch):
    """Under tox -e pypy3, PATH's first python3 is PyPy: the CPython servers must not run on it."""
    python, runtime = registry.cpython("loadtest.contenders.stock_sockjs_tornado")
    impostor = tmp_path / "python3"
    impostor.write_text('#!/bin/sh\necho "PyPy 7.3.11 (Python 3.9.16)"\n')
    os.chmod(impostor, 0o755)
    monkeypatch.setattr(registry, "cpython_candidates", lambda: [str(impostor), python])
    assert registry.cpython("loadtest.contenders.stock_sockjs_tornado") == (python, runtime)
    monkeypatch.setattr(registry, "cpython_candidates", lambda: [str(impostor)])
    with pytest.raises(registry.Unavailable) as none:
        registry.cpython("loadtest.contenders.stock_sockjs_tornado")
    assert "%s is PyPy 7.3.11" % impostor in str(none.value)
