"""--allowed-origins: which pages may use the broker, as a rule and on the wire."""

import pytest

from broker.core.origins import OriginPolicy, normalize


GOOD = "https://good.example"


EVIL = "http://evil.example"


def test_origins_compare_in_one_form():
    assert normalize(" HTTPS://Good.Example:443 ") == GOOD
    assert normalize("http://h:8080") == "http://h:8080"
    assert normalize("null") == "null"
    for bad in ("good.example", "ftp://x", "https://x/path", "*"):
        with pytest.raises(ValueError):
            normalize(bad)


def test_a_list_allows_its_origins_and_the_page_s_own_only():
    policy = OriginPolicy([GOOD, "null"])
    assert policy.allows("https://GOOD.example", "broker:8080")
    assert policy.allows("null", "broker:8080")
    assert policy.allows("http://broker:8080", "broker:8080"), "same origin"
    assert not policy.allows(EVIL, "broker:8080")
    assert not policy.allows("garbage", "broker:8080")
    assert policy.frame_ancestors() == "frame-ancestors 'self' https://good.example"


def test_star_allows_any_origin_and_any_framing():
    policy = OriginPolicy()
    assert policy.allows(EVIL, "broker") and policy.allows("null", "broker")
    assert policy.frame_ancestors() is None
    with pytest.raises(ValueError):
        OriginPolicy(["*", GOOD])
