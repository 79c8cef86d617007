"""An operator's mistake stops ``python -m broker`` as it starts with one line on stderr that
names what to fix (the flag, and the ``BROKER_*`` variable where the value came from one),
never a secret, never a traceback, and exit status 2: the status the systemd unit does not
restart (``RestartPreventExitStatus=2``), where a traceback's 1 is restarted every second,
for ever. A password holding ``/``, ``@``, ``:``, ``?`` or ``#`` shows in no refusal, whatever
the URL's form."""

import os
import socket
import subprocess
import sys
import urllib.parse

import pytest

# Pieces of the password below: neither may show, on either side of its odd character.
SECRET = ("Zq7w", "Kx9v")
# Long enough for a broker to reach its bind on a loaded machine; a broker still running then
# started, which is the failure.
EXIT_WITHIN_S = 30


def start_up_refusal(argv, environ=None):
    """The one line ``python -m broker argv`` (with ``environ`` for the ``BROKER_*``
    variables) writes as it refuses to start; it must exit 2 with nothing else written."""
    environment = {name: value for name, value in os.environ.items() if not name.startswith("BROKER_")}
    process = subprocess.Popen([sys.executable, "-m", "broker"] + list(argv),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=dict(environment, **(environ or {})))
    try:
        stdout, stderr = process.communicate(timeout=EXIT_WITHIN_S)
    except subprocess.TimeoutExpired:
        process.kill()
        stdout, stderr = process.communicate()
        pytest.fail("started, or hung, instead of refusing: %s %s" % (stdout, stderr))
    assert process.returncode == 2, "status %d, which the unit restarts: %s" % (process.returncode, stderr)
    assert stdout == "" and len(stderr.splitlines()) == 1, stdout + stderr
    assert stderr.startswith("python -m broker: error: "), stderr
    for piece in SECRET:
        assert piece not in stderr, stderr
    return stderr


def password(odd):
    return SECRET[0] + odd + SECRET[1]


@pytest.mark.parametrize("argv, environ, named", [
    # A password with / ? # ends urllib's host early: it was quoted whole as the "port".
    (["--redis", "redis://:%s@127.0.0.1:6379/0" % password("/")], {}, "argument --redis: "),
    (["--redis", "rediss://user:%s@127.0.0.1:6379/0" % password("?")], {}, "argument --redis: "),
    ([], {"BROKER_REDIS": "unix://:%s@/run/redis.sock?db=0" % password("#")}, "(from BROKER_REDIS)"),
    # An @ of the password: half of it was quoted.
    (["--redis", "redis+sentinel://:%s@127.0.0.1:99999/mymaster" % password("@")], {}, "argument --redis: "),
    (["--redis", "redis://:%s@127.0.0.1:99999/0" % password("@")], {}, "argument --redis: "),
    (["--redis", "redis+sentinel://:%s@127.0.0.1:26379/" % password(":")], {}, "argument --redis: "),
    # redis-py's options, which it read only as the broker connected: a traceback, status 1.
    (["--redis", "unix:///run/redis.sock?db=x"], {}, "argument --redis: "),
    (["--redis", "redis://127.0.0.1:6379/0?password=%s&socket_timeout=soon" % password("-")], {},
     "--redis (BROKER_REDIS): "),
    ([], {"BROKER_REDIS": "redis://127.0.0.1:6379/0?sockettimeout=5"}, "--redis (BROKER_REDIS): "),
    # redis-py took a database it could not read as database 0.
    (["--redis", "redis://127.0.0.1:6379/one"], {}, "argument --redis: "),
    # argparse printed its 22 lines of usage first.
    (["--client-rate", "0.4"], {}, "argument --client-rate: "),
    (["--max-buffer", "lots"], {}, "argument --max-buffer: "),
    # A mistyped flag was quoted with its value: the token, here.
    (["--publish-tokn", password("-")], {}, "no such flag: --publish-tokn "),
    # The error named the flag, which the unit's files do not set: the variable is what to fix.
    ([], {"BROKER_CLIENT_RATE": "0.4"}, "(from BROKER_CLIENT_RATE)"),
    ([], {"BROKER_LOG_LEVEL": "verbose"}, "(from BROKER_LOG_LEVEL)"),
    ([], {"BROKER_MAX_BUFFER": "６４KiB"}, "(from BROKER_MAX_BUFFER)"),  # read as 64 KiB
    # A misspelt variable was ignored: the broker started without the limit the operator set.
    ([], {"BROKER_MAX_CONECTIONS": "19000"}, "did you mean BROKER_MAX_CONNECTIONS?"),
    # A switch that said neither on nor off was off.
    ([], {"BROKER_NO_CLIENT_PUBLISH": "ture"}, "BROKER_NO_CLIENT_PUBLISH is a switch: "),
    (["--certfile", "/nonexistent/broker.pem"], {}, "--certfile (BROKER_CERTFILE) /nonexistent/broker.pem: "),
    # An address of no interface here: a traceback once everything else had started.
    (["--host", "192.0.2.1", "--port", "8080"], {}, "--host (BROKER_HOST)"),
], ids=["slash-in-a-redis-password", "question-mark-in-a-rediss-password", "hash-in-a-unix-password-variable",
        "at-in-a-sentinel-password", "at-in-a-redis-password", "colon-in-a-sentinel-password",
        "unix-db-not-a-number", "redis-py-option-value", "redis-py-option-name-variable",
        "redis-path-not-a-database", "flag-out-of-range", "flag-not-a-size", "mistyped-flag-and-its-token",
        "variable-out-of-range",
        "variable-not-a-choice", "variable-in-fullwidth-digits", "misspelt-variable",
        "switch-neither-on-nor-off", "certificate-missing", "address-of-no-interface"])
def test_a_setting_that_cannot_work_is_one_line_naming_it_and_exit_status_2(argv, environ, named):
    assert named in start_up_refusal(argv, environ)


@pytest.fixture
def taken_port():
    """A port another process's socket listens on."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen(1)
        yield holder.getsockname()[1]


def test_a_port_another_broker_holds_is_one_line_and_not_retried(start_broker):
    first = start_broker()
    port = urllib.parse.urlsplit(first.url).port
    line = start_up_refusal(["--port", str(port)])
    assert "127.0.0.1:%d" % port in line and "--port (BROKER_PORT)" in line, line
    assert first.request("GET", "/healthz")[0] == 200


def test_a_taken_port_is_refused_before_the_broker_waits_for_its_redis(taken_port):
    """Nothing answers on port 1: a broker that reached for its Redis first would wait there,
    and find its port taken only once Redis came."""
    line = start_up_refusal(["--port", str(taken_port), "--redis", "redis://127.0.0.1:1/0"],
                            {"BROKER_WARM_UP_SESSIONS": "100000"})
    assert "--port (BROKER_PORT)" in line, line
