"""``compare --tls``: the certificate's command, and the contenders that cannot serve TLS, without processes."""

import re

import pytest

from loadtest import command_line
from loadtest.contenders import certificate, registry

MADE = certificate.Certificate("/tmp/x/cert.pem", "/tmp/x/key.pem")


def test_the_certificate_is_self_signed_for_the_loopback_address_and_short_lived():
    argv = certificate.openssl_argv("openssl", MADE.certfile, MADE.keyfile)
    assert argv[:3] == ["openssl", "req", "-x509"]
    assert "subjectAltName=IP:127.0.0.1" in argv and "-nodes" in argv
    assert argv[argv.index("-days") + 1] == "1"
    assert (argv[argv.index("-keyout") + 1], argv[argv.index("-out") + 1]) == (MADE.keyfile, MADE.certfile)
    assert MADE.broker_flags() == ["--certfile", MADE.certfile, "--keyfile", MADE.keyfile]


@pytest.mark.parametrize("name", ["sockjs-node", "sockjs-tornado"])
def test_a_server_without_tls_is_unavailable_over_tls(name):
    with pytest.raises(registry.Unavailable, match=re.escape("%s+tls: %s serves no TLS" % (name, name))):
        registry.resolve(name, certificate=MADE)


def test_every_tls_capable_contender_is_a_known_one():
    assert set(registry.TLS_CAPABLE) <= set(registry.NAMES)


@pytest.mark.parametrize("argv, tls", [([], "off"), (["--tls"], "on"), (["--tls", "both"], "both"),
                                       (["--tls", "on"], "on")])
def test_tls_alone_means_on_and_both_measures_each_broker_twice(argv, tls):
    assert command_line.build_parser().parse_args(["compare"] + argv).tls == tls


def test_an_unknown_tls_mode_is_refused(capsys):
    with pytest.raises(SystemExit) as exit:
        command_line.build_parser().parse_args(["compare", "--tls", "sometimes"])
    assert exit.value.code == 2
    assert "invalid choice: 'sometimes'" in capsys.readouterr().err
