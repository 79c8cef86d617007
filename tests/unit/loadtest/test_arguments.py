"""Command-line argument types: loopback targets and source addresses."""

import argparse
import re

import pytest

from loadtest import arguments


def test_source_address_ranges():
    assert arguments.parse_source_addresses("127.0.0.2-127.0.0.4") == ["127.0.0.2", "127.0.0.3", "127.0.0.4"]
    assert arguments.parse_source_addresses("127.0.0.2,127.0.1.9") == ["127.0.0.2", "127.0.1.9"]


def test_connections_take_the_source_addresses_in_turn():
    addresses = ["127.0.0.2", "127.0.0.3"]
    assert [arguments.source_address(addresses, n) for n in range(3)] == [
        ("127.0.0.2", 0), ("127.0.0.3", 0), ("127.0.0.2", 0)]
    assert arguments.source_address([], 5) is None


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
                                 "https://127.0.0.1:8443/broadcast", "https://localhost/a", "https://[::1]:443/b"])
def test_loopback_urls_pass(url):
    assert arguments.loopback_url(url) == url


def test_a_transport_mix_names_its_transports_canonically():
    assert arguments.transport_mix("sockjs=70, xhr-polling=30") == "mix:websocket=70,xhr-polling=30"


def test_a_list_of_transports_names_each_once_canonically_in_order():
    assert arguments.transports("xhr-polling, sockjs,websocket,htmlfile") == ["xhr-polling", "websocket", "htmlfile"]
    assert arguments.transports("raw") == ["raw"]


def test_a_file_without_certificates_is_no_authority_to_trust(tmp_path):
    (tmp_path / "empty.pem").write_text("no certificate here\n")
    with pytest.raises(argparse.ArgumentTypeError, match="cannot trust .*empty.pem"):
        arguments.certificates(str(tmp_path / "empty.pem"))
