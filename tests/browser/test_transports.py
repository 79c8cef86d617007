"""sockjs-client 1.6 in Chromium reaches the broker over every transport it can choose,
in plain http and over TLS (``--certfile``: https and wss)."""

import pytest

from chromium_scripts import TRANSPORTS


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_two_browsers_chat_over_one_forced_transport(start_broker, browser_script, transport):
    broker = start_broker()
    result = browser_script("transport.js", broker.origin, transport)
    assert result["used"] == [transport, transport]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_no_message_escapes_its_frame(start_broker, browser_script, transport):
    broker = start_broker()
    result = browser_script("hostile.js", broker.origin, transport)
    assert result["received"] == [result["sent"], result["sent"]]
    assert result["ran"] == 0, "a message ran as script over %s" % transport


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_two_browsers_chat_over_https(start_broker, browser_script, tls_files, transport):
    broker = start_broker("--certfile", tls_files.certfile, "--keyfile", tls_files.keyfile)
    assert broker.origin.startswith("https://")
    result = browser_script("transport.js", broker.origin, transport,
                            env={"TRUSTED_SPKI_SHA256": tls_files.spki_sha256()})
    assert result["used"] == [transport, transport]
