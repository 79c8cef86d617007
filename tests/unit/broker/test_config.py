"""The broker's command line: its version, from the package; every value checked against its range."""

import pytest

from broker import config
from broker.flags import Bounded, parse_size
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
    assert "--keyfile (BROKER_KEYFILE) needs --certfile (BROKER_CERTFILE)" in capsys.readouterr().err
    assert config.parse_args(["--certfile", "broker.pem"]).keyfile is None


RANGED = [flag for flag in config.FLAGS if isinstance(flag.type, Bounded)]


def test_every_flag_that_takes_a_value_checks_it():
    """No flag takes its text as it comes: each has a type of its own (a range, a pattern,
    a list of names) or a list of choices."""
    unchecked = [flag.name for flag in config.FLAGS
                 if not flag.switch and flag.type in (str, int, float) and flag.choices is None
                 and flag.name not in ("--certfile", "--keyfile", "--token-public-key")]  # files: read at start
    assert unchecked == []


@pytest.mark.parametrize("flag", RANGED, ids=[flag.name for flag in RANGED])
def test_a_ranges_bounds_are_taken_and_past_them_is_refused(flag, capsys):
    kind = flag.type
    for bound in [kind.least, kind.most] + ([0] if kind.off else []):
        text = "%d" % bound if bound == int(bound) else repr(bound)
        assert getattr(config.parse_args([flag.name, text], environ={}), dest(flag)) == bound
    beyond = [repr(kind.most * 2 + 1), "nan", "inf", "-inf", "-1"]
    if kind.least > 0:
        beyond.append(repr(kind.least / 2) if kind.off else "0")
    for text in beyond:
        with pytest.raises(SystemExit) as exit:
            config.parse_args([flag.name + "=" + text], environ={})
        assert exit.value.code == 2
        error = capsys.readouterr().err.splitlines()[-1]
        assert error.startswith("python -m broker: error: argument %s: " % flag.name), (text, error)
        assert ("must be " + kind.range) in error or ": not a" in error, (text, error)


@pytest.mark.parametrize("flag", RANGED, ids=[flag.name for flag in RANGED])
def test_a_variable_is_refused_as_its_flag_is(flag, capsys):
    with pytest.raises(SystemExit) as exit:
        config.parse_args([], environ={flag.variable("BROKER_"): "nan"})
    assert exit.value.code == 2
    assert "argument %s:" % flag.name in capsys.readouterr().err


def test_the_help_states_each_range_once():
    text = " ".join(config.build_parser({}).format_help().split())
    for flag in RANGED:
        assert text.count("range: " + flag.type.range) >= 1, flag.name
    assert "range: auto, or 1 to 10000000" in text


def test_a_choice_from_the_environment_is_checked_as_a_typed_one(capsys):
    assert config.parse_args([], environ={"BROKER_LOG_LEVEL": "debug"}).log_level == "debug"
    with pytest.raises(SystemExit):
        config.parse_args([], environ={"BROKER_LOG_LEVEL": "verbose"})
    assert "argument --log-level: invalid choice: 'verbose'" in capsys.readouterr().err


@pytest.mark.parametrize("text, size", [("1KiB", 1024), ("64MiB", 64 << 20), ("1G", 1 << 30), ("65536", 65536)])
def test_sizes_read_with_their_units(text, size):
    assert parse_size(text) == size


def dest(flag):
    return flag.dest or flag.name.lstrip("-").replace("-", "_")


def test_the_help_names_the_broker_as_it_was_started():
    assert config.program("/opt/sockjs-broker/.venv/bin/sockjs-broker") == "sockjs-broker"
    assert config.program("/opt/sockjs-broker/broker/__main__.py") == "python -m broker"
    assert config.program("-c") == "python -m broker"
