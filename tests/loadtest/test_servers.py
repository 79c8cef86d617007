"""``child_process.launch`` says why a server never listened; ``placement`` gives brokers their flags."""

import sys

import pytest

from loadtest.contenders import child_process, placement, registry


def test_a_server_that_exits_before_listening_reports_its_exit_code():
    with pytest.raises(child_process.ServerError) as failed:
        child_process.launch([sys.executable, "-c", "print('no port for me'); raise SystemExit(3)"])
    assert "exited with code 3 before listening" in str(failed.value)
    assert "no port for me" in str(failed.value)


def test_a_server_that_exits_cleanly_before_listening_is_not_a_timeout():
    with pytest.raises(child_process.ServerError) as failed:
        child_process.launch([sys.executable, "-c", "pass"])
    assert "exited with code 0 before listening" in str(failed.value)


def test_a_silent_server_times_out():
    with pytest.raises(child_process.ServerError) as failed:
        child_process.launch([sys.executable, "-c", "print('starting'); import time; time.sleep(30)"], timeout=1)
    assert "timed out after 1 s before listening" in str(failed.value)
    assert "starting" in str(failed.value)


def test_the_brokers_of_a_comparison_run_with_the_flags_given_after_the_usual_ones():
    class Status:
        def message(self, text):
            raise AssertionError(text)

    (broker,) = placement.resolve_all(["broker-cpython"], Status(), broker_flags=["--warm-up-sessions", "10"])
    assert broker.argv[-4:] == [*registry.BROKER_FLAGS, "--warm-up-sessions", "10"]


def test_a_failed_start_shows_its_command_with_the_secrets_hidden():
    script = "import sys; print('started as', len(sys.argv)); raise SystemExit(2)"
    with pytest.raises(child_process.ServerError) as failed:
        child_process.launch([sys.executable, "-c", script, "--publish-token", "publish-s3cret", "--admin-token",
                              "admin-s3cret", "--token-secret=" + "t" * 32, "--port", "0"])
    shown = str(failed.value)
    assert "s3cret" not in shown and "t" * 32 not in shown
    assert "--publish-token <hidden> --admin-token <hidden> --token-secret=<hidden> --port 0" in shown


def test_the_load_client_hides_every_flag_the_broker_calls_secret():
    from broker import config

    assert set(child_process.SECRET_FLAGS) == {flag.name for flag in config.FLAGS if flag.secret}
