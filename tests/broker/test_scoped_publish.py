"""POST /publish with a JWT scoped to rooms and operations, beside the static publish tokens, over
real HTTP: a JWT publishes in the rooms of its ``publish`` scope and changes counters in those of
its ``count`` scope, nowhere else (403, ``insufficient_scope``); one that does not verify is 401
(``invalid_token``), its text in no answer and no log line; a static token keeps every right; two
static tokens or two secrets are valid at once, so that an operator rotates them without a
failed publish; the admin endpoint takes its own static token only."""

import json
import time
import urllib.error
import urllib.request

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from sockjs_clients import WebSocketClient, wait_until

SECRET = "s" * 32 + "-the-secret-in-use"
OLD_SECRET = "o" * 32 + "-the-secret-rotated-out"
STATIC = "static-publish-token"


def mint(secret=SECRET, algorithm="HS256", lifetime=300, **scopes):
    """A JWT of subject "backend" signed with ``secret`` by ``algorithm``, expiring ``lifetime``
    seconds from now (negative: expired), of the ``scopes`` given (lists of patterns)."""
    claims = dict(sub="backend", exp=int(time.time()) + lifetime, **scopes)
    return jwt.encode(claims, secret, algorithm=algorithm)


def bearer(token):
    return {"Authorization": "Bearer " + token}


def publish(broker, token, body=b"hello", room=None, key=None, op=None):
    """(status, answer, WWW-Authenticate) of POST /publish of ``body`` with bearer ``token``,
    in ``room`` (None: the default room), of conflating key ``key``, with ``op``."""
    query = "&".join("%s=%s" % pair for pair in (("room", room), ("key", key), ("op", op)) if pair[1] is not None)
    request = urllib.request.Request(broker.origin + "/publish" + ("?" + query if query else ""), data=body,
                                     method="POST", headers=bearer(token))
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            status, data, headers = response.status, response.read(), response.headers
    except urllib.error.HTTPError as error:
        status, data, headers = error.code, error.read(), error.headers
    return status, json.loads(data), headers.get("WWW-Authenticate")


INSUFFICIENT = 'Bearer realm="publish", error="insufficient_scope"'
INVALID = 'Bearer realm="publish", error="invalid_token"'


def test_a_jwt_publishes_only_in_the_rooms_of_its_publish_scope(start_broker):
    broker = start_broker("--token-secret", SECRET)
    token = mint(publish=["news-*"])
    with WebSocketClient(broker.url, query="rooms=news-1") as news, WebSocketClient(broker.url) as default:
        wait_until(lambda: broker.stats()["connections_total"] == 2)
        status, answer, _ = publish(broker, token, b"first", room="news-1")
        assert (status, answer["recipients"]) == (200, 1), answer
        assert news.receive() == ["first"]
        for room in ("other-1", None):
            status, answer, challenge = publish(broker, token, b"nope", room=room)
            assert (status, challenge) == (403, INSUFFICIENT), answer
            assert "may not publish in %s" % ("room other-1" if room else "the default room") in answer["error"]
            assert token not in answer["error"]
        # Keyed, it publishes where it may; a counter's change needs the count scope, there too.
        assert publish(broker, token, b"latest", room="news-1", key="headline")[0] == 200
        assert news.receive() == ["latest"]
        for op in ("add", "max"):
            status, answer, challenge = publish(broker, token, b"1", room="news-1", key="n", op=op)
            assert (status, challenge) == (403, INSUFFICIENT), answer
            assert "may not change counters in room news-1" in answer["error"]
        publish(broker, mint(publish=["*"]), b"to everyone here")
        assert default.receive() == ["to everyone here"]
    stats = broker.stats()
    # A room out of scope is never made: only news-1 was.
    assert (stats["messages_in"], stats["rooms_created"]) == (3, 1), stats


def test_the_count_scope_changes_counters_and_publishes_nothing(start_broker):
    broker = start_broker("--token-secret", SECRET)
    token = mint(count=["scores"])
    with WebSocketClient(broker.url, query="rooms=scores") as scores:
        wait_until(lambda: broker.stats()["connections_total"] == 1)
        status, answer, _ = publish(broker, token, b"5", room="scores", key="goals", op="add")
        assert (status, answer["value"]) == (200, "5"), answer
        status, answer, _ = publish(broker, token, b"9", room="scores", key="goals", op="max")
        assert (status, answer["value"]) == (200, "9"), answer
        assert scores.collect(2) == [{"counter": "goals", "value": "5"}, {"counter": "goals", "value": "9"}]
        for key in (None, "goals"):
            status, answer, challenge = publish(broker, token, b"plain", room="scores", key=key)
            assert (status, challenge) == (403, INSUFFICIENT), answer
            assert "may not publish in room scores" in answer["error"]
        status, answer, challenge = publish(broker, token, b"1", room="scores-2", key="goals", op="add")
        assert (status, challenge) == (403, INSUFFICIENT), answer


def rsa_private_pem():
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def swapped_claims(signed, claims):
    """JWT ``signed``'s header and signature around JWT ``claims``' payload: a forgery."""
    header, _, signature = signed.split(".")
    return ".".join((header, claims.split(".")[1], signature))


@pytest.mark.parametrize("why, token, said", [
    ("expired", mint(publish=["*"], lifetime=-10), "expired"),
    ("forged with another secret", mint(secret="x" * 40, publish=["*"]), "signature"),
    ("alg none", jwt.encode({"sub": "backend", "exp": int(time.time()) + 300, "publish": ["*"]}, None,
                            algorithm="none"), "none"),
    ("RS256, a key this broker has not", mint(secret=rsa_private_pem(), algorithm="RS256", publish=["*"]),
     "RS256"),
    ("not a JWT", "not-a-jwt-at-all", "not a JWT"),
    ("claims changed", swapped_claims(mint(publish=["news"]), mint(publish=["*"])), "signature"),
], ids=lambda value: value if isinstance(value, str) and " " in value or value == "expired" else "")
def test_a_jwt_that_does_not_verify_is_401_invalid_token_and_never_echoed(start_broker, why, token, said):
    broker = start_broker("--token-secret", SECRET, "--publish-token", STATIC, "--log-level", "info")
    status, answer, challenge = publish(broker, token)
    assert (status, challenge) == (401, INVALID), (why, answer)
    assert said in answer["error"] and token not in answer["error"], (why, answer)
    assert broker.stats()["messages_in"] == 0
    # The refusal is logged (rate-limited), never with the token's text.
    wait_until(lambda: "publish refused a token" in broker.server.output)
    assert token not in broker.server.output


def test_a_static_token_keeps_every_right_beside_jwts(start_broker):
    broker = start_broker("--token-secret", SECRET, "--publish-token", STATIC)
    with WebSocketClient(broker.url) as default, WebSocketClient(broker.url, query="rooms=any-room") as room:
        wait_until(lambda: broker.stats()["connections_total"] == 2)
        assert publish(broker, STATIC, b"d")[0] == 200
        assert publish(broker, STATIC, b"r", room="any-room")[0] == 200
        status, answer, _ = publish(broker, STATIC, b"3", room="any-room", key="n", op="add")
        assert (status, answer["value"]) == (200, "3")
        assert default.receive() == ["d"]
        assert room.receive() == ["r"]
        # A JWT on the same broker within its scope, and a wrong static token: no JWT, 401.
        assert publish(broker, mint(publish=["any-*"]), b"j", room="any-room")[0] == 200
        status, _, challenge = publish(broker, STATIC + "-but-not", b"x")
        assert (status, challenge) == (401, INVALID)


def test_a_jwt_to_a_broker_without_a_token_key_is_a_wrong_token(start_broker):
    broker = start_broker("--publish-token", STATIC)
    for token in (mint(publish=["*"]), "wrong"):
        status, answer, challenge = publish(broker, token)
        assert (status, answer, challenge) == (403, {"error": "wrong token"}, None)
    assert broker.stats()["messages_in"] == 0


def test_two_secrets_are_both_valid_then_the_rotated_out_one_is_not(start_broker):
    both = start_broker("--token-secret", SECRET + " " + OLD_SECRET)
    new, old = mint(publish=["*"]), mint(secret=OLD_SECRET, publish=["*"])
    assert [publish(both, token)[0] for token in (new, old)] == [200, 200]
    rotated = start_broker("--token-secret", SECRET)
    assert publish(rotated, new)[0] == 200
    status, answer, challenge = publish(rotated, old)
    assert (status, challenge) == (401, INVALID) and "signature" in answer["error"], answer


def test_the_admin_drain_takes_neither_a_jwt_nor_the_publish_token(start_broker):
    broker = start_broker("--token-secret", SECRET, "--publish-token", STATIC, "--admin-token", "admin-token")
    for token in (mint(publish=["*"], count=["*"], rooms=["*"]), STATIC):
        assert broker.request("POST", "/admin/drain", b"", bearer(token)) == (403, {"error": "wrong token"})
    assert broker.stats()["drain"]["draining"] is False
    assert broker.request("POST", "/admin/drain", b"", bearer("admin-token"))[0] == 202
