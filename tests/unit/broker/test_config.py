"""The broker's command line: its version, from the package."""

import pytest

from broker import config
import broker


def test_version_is_the_packages(capsys):
    with pytest.raises(SystemExit) as exit:
        config.parse_args(["--version"])
    assert exit.value.code == 0
    assert capsys.readouterr().out == "sockjs-broker %s\n" % broker.__version__


def test_trusted_proxies_are_addresses_or_networks(capsys):
    assert config.parse_args(["--trusted-proxies", "10.0.0.0/8, ::1"]).trusted_proxies == ("10.0.0.0/8", "::1")
    assert config.parse_args([]).trusted_proxies == ("127.0.0.0/8", "::1")
    with pytest.raises(SystemExit):
        config.parse_args(["--trusted-proxies", "10.0.0.0/8,not-an-address"])
    assert "argument --trusted-proxies" in capsys.readouterr().err


def test_a_key_file_needs_a_certificate(capsys):
    with pytest.raises(SystemExit):
        config.parse_args(["--keyfile", "broker.key"])
    assert "--keyfile needs --certfile" in capsys.readouterr().err
    assert config.parse_args(["--certfile", "broker.pem"]).keyfile is None
