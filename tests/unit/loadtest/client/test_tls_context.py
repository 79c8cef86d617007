"""What the load client trusts over TLS, and which connections are TLS: an https service's, and no other."""

import ssl

import pytest
import trustme

from loadtest.client import tls_context
from loadtest.framing import endpoints

PLAIN = endpoints.target("http://127.0.0.1:8080/broadcast")
OVER_TLS = endpoints.target("https://127.0.0.1:8443/broadcast")


@pytest.fixture
def trusted_file(tmp_path):
    """A test authority's certificate as a PEM file; the process trusts the system's again afterwards."""
    path = tmp_path / "ca.pem"
    trustme.CA().cert_pem.write_to_path(str(path))
    yield str(path)
    tls_context.trust(None)


def test_a_plain_service_gets_no_context():
    assert tls_context.context_for(PLAIN) is None


def test_an_https_service_is_verified_against_the_system_s_authorities_by_default():
    assert tls_context.trusted() is None
    context = tls_context.context_for(OVER_TLS)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.minimum_version in (ssl.TLSVersion.MINIMUM_SUPPORTED, ssl.TLSVersion.TLSv1_2)
    assert context is tls_context.context_for(OVER_TLS)  # one per process, not one per connection


def test_a_trusted_file_replaces_the_system_s_authorities(trusted_file):
    tls_context.trust(trusted_file)
    assert tls_context.trusted() == trusted_file
    context = tls_context.context_for(OVER_TLS)
    assert context is not tls_context.client_context(None)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert [cert["subject"] for cert in context.get_ca_certs()] == [
        cert["subject"] for cert in tls_context.client_context(trusted_file).get_ca_certs()]
    assert len(context.get_ca_certs()) == 1
    assert tls_context.context_for(PLAIN) is None
