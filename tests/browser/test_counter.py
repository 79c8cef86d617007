"""A counter the broker keeps, in Chromium: a page with broker-client.js's oncounter shows the
exact total after concurrent adds, and again after its connection was cut while adds went on."""

TOKEN = "t"


def test_a_page_shows_the_exact_total_after_concurrent_adds_and_a_reconnect(start_broker, browser_script):
    broker = start_broker("--publish-token", TOKEN, "--replay", "0")
    seen = browser_script("counter.js", broker.origin, TOKEN)
    assert seen["first"] == "2.00" and seen["after reconnect"] == "3.00", seen
    assert seen["opens"] == 2 and seen["errors"] == [] and seen["messages"] == []
    cents = [int(value.replace(".", "")) for name, value in seen["shown"]]
    assert {name for name, _ in seen["shown"]} == {"raised"}
    assert all(a < b for a, b in zip(cents, cents[1:])), "each total shown once, never going down: %s" % cents
    assert broker.stats()["counters"] == {"raised": "3.00"}
