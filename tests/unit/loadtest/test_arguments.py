"""Command-line argument types: loopback targets and source addresses."""

import argparse
import re

import pytest

from loadtest import arguments


def test_source_address_ranges():
    assert arguments.parse_source_addresses("127.0.0.2-127.0.0.4") == ["127.0.0.2", "127.0.0.3", "127.0.0.4"]
    assert arguments.parse_source_addresses("127.0.0.2,127.0.1.9") == ["127.0.0.2", "127.0.1.9"]


@pytest.mark.parametrize("parse, text, message", [
    (arguments.parse_source_addresses, "127.0.0.2,10.0.0.1", "must be loopback addresses (got 10.0.0.1)"),
    (arguments.loopback_url, "http://10.0.0.1:8080/broadcast", "only loopback servers may be load tested"),
    (arguments.loopback_url, "ws://127.0.0.1:8080/broadcast", "must look like http://127.0.0.1:8080/broadcast"),
    (arguments.loopback_url, "https://10.0.0.1:8443/broadcast", "only loopback servers may be load tested"),
    (arguments.loopback_url, "https://example.com/broadcast", "only loopback servers may be load tested"),
    (arguments.certificates, "/nonexistent/ca.pem", "cannot trust /nonexistent/ca.pem: No such file"),
    (arguments.comma_list(arguments.positive_int), ",", "expected a comma-separated list"),
    (arguments.transport_mix, "websocket=70,carrier-pigeon=30", "'carrier-pigeon' is no transport"),
    (arguments.transport_mix, "websocket=70,sockjs=30", "'websocket' is no transport, or twice"),
    (arguments.transport_mix, "websocket=0", "the weight of websocket must be a whole number above 0"),
    (arguments.transport_mix, "websocket", "the weight of websocket must be a whole number above 0"),
    (arguments.transports, "websocket,carrier-pigeon", "unknown transport carrier-pigeon (known: websocket,"),
    (arguments.transports, ",", "unknown transport ''"),
])
def test_what_cannot_be_measured_is_refused(parse, text, message):
    with pytest.raises(argparse.ArgumentTypeError, match=re.escape(message)):
        parse(text)


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080/broadcast", "http://localhost:8080/a", "http://[::1]:80/b",
                                 "https://127.0.0.1:8443/broadcast", "https://localhost/a", "https://[::1]:443/b",
                                 "http://127.0.0.2:8080/b", "http://[::ffff:127.0.0.1]:8080/b"])
def test_loopback_urls_pass(url):
    assert arguments.loopback_url(url) == url


@pytest.mark.parametrize("host, loopback", [
    ("127.attacker.example", False),  # a name, not an address: what it resolves to decides, and it is not loopback
    ("localhost", True),
    ("::1", True),
    ("127.0.0.2", True),
    ("10.0.0.1", False),
    ("0.0.0.0", False),  # every address of this machine, not loopback
    ("::", False),
    ("::ffff:127.0.0.1", True),  # IPv4-mapped: reaches 127.0.0.1 itself
    ("::ffff:10.0.0.1", False),
])
def test_a_host_is_loopback_by_every_address_it_resolves_to(host, loopback):
    if loopback:
        assert arguments.loopback_host(host) == host
    else:
        with pytest.raises(argparse.ArgumentTypeError, match="only loopback servers may be load tested"):
            arguments.loopback_host(host)
    url = "http://%s:8080/broadcast" % ("[%s]" % host if ":" in host else host)
    if loopback:
        assert arguments.loopback_url(url) == url
    else:
        with pytest.raises(argparse.ArgumentTypeError, match="only loopback servers may be load tested"):
            arguments.loopback_url(url)


@pytest.mark.parametrize("text", ["127.attacker.example", "localhost", "0.0.0.0", "127.0.0.2-10.0.0.9",
                                  "127.0.0.9-127.0.0.2", "127.0.0.2-127.0.1.2"])
def test_source_addresses_are_loopback_addresses_not_names(text):
    with pytest.raises(argparse.ArgumentTypeError):
        arguments.parse_source_addresses(text)


@pytest.mark.parametrize("flags, allowed", [
    ("--warm-up-sessions 3000", True), ("--host 127.0.0.1", True), ("--host=::1", True),
    ("--redis redis://127.0.0.1:6379/0", True), ("--redis=unix:///run/redis.sock", True),
    ("--host 0.0.0.0", False), ("--host=127.attacker.example", False),
    ("--redis redis://10.0.0.1:6379/0", False), ("--redis=redis://127.attacker.example/0", False),
])
def test_broker_flags_keep_the_launched_brokers_and_their_redis_on_loopback(flags, allowed):
    if allowed:
        assert arguments.broker_flags(flags) == flags
    else:
        with pytest.raises(argparse.ArgumentTypeError, match="only loopback"):
            arguments.broker_flags(flags)


def test_a_transport_mix_names_its_transports_canonically():
    assert arguments.transport_mix("sockjs=70, xhr-polling=30") == "mix:websocket=70,xhr-polling=30"


def test_a_list_of_transports_names_each_once_canonically_in_order():
    assert arguments.transports("xhr-polling, sockjs,websocket,htmlfile") == ["xhr-polling", "websocket", "htmlfile"]
    assert arguments.transports("raw") == ["raw"]


def test_a_file_without_certificates_is_no_authority_to_trust(tmp_path):
    (tmp_path / "empty.pem").write_text("no certificate here\n")
    with pytest.raises(argparse.ArgumentTypeError, match="cannot trust .*empty.pem"):
        arguments.certificates(str(tmp_path / "empty.pem"))
