"""POST /publish with a JWT scoped to rooms and operations, beside the static publish tokens, over
real HTTP: a JWT publishes in the rooms of its ``publish`` scope and changes counters in those of
its ``count`` scope, nowhere else (403, ``insufficient_scope``); one that does not verify is 401
(``invalid_token``), its text in no answer and no log line; a static token keeps every right; two
static tokens or two secrets are valid at once, so that an operator rotates them without a
failed publish; the admin endpoint takes its own static token only."""

import base64
import hashlib
import hmac
import json
import signal
import threading
import time
import types
import urllib.error
import urllib.parse
import urllib.request

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

import deployment
from loadtest.contenders import haproxy
from sockjs_clients import WebSocketClient, wait_until

SECRET = "s" * 32 + "-the-secret-in-use"
OLD_SECRET = "o" * 32 + "-the-secret-rotated-out"
STATIC = "static-publish-token"
NEW, OLD = "the-publish-token-in-use", "the-publish-token-rotated-out"


def mint(secret=SECRET, algorithm="HS256", lifetime=300, **scopes):
    """A JWT of subject "backend" signed with ``secret`` by ``algorithm``, expiring ``lifetime``
    seconds from now (negative: expired), of the ``scopes`` given (lists of patterns)."""
    claims = dict(sub="backend", exp=int(time.time()) + lifetime, **scopes)
    return jwt.encode(claims, secret, algorithm=algorithm)


def bearer(token):
    return {"Authorization": "Bearer " + token}


def publish(broker, token, body=b"hello", room=None, key=None, op=None):
    """(status, answer, WWW-Authenticate) of POST /publish to ``broker`` (anything with an
    ``origin``) of ``body`` with bearer ``token``,
    in ``room`` (None: the default room), of conflating key ``key``, with ``op``."""
    query = "&".join("%s=%s" % pair for pair in (("room", room), ("key", key), ("op", op)) if pair[1] is not None)
    request = urllib.request.Request(broker.origin + "/publish" + ("?" + query if query else ""), data=body,
                                     method="POST", headers=bearer(token))
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            status, data, headers = response.status, response.read(), response.headers
    except urllib.error.HTTPError as error:
        status, data, headers = error.code, error.read(), error.headers
    answer = json.loads(data) if headers.get("Content-Type", "").startswith("application/json") else data.decode()
    return status, answer, headers.get("WWW-Authenticate")


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


RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)


def rsa_private_pem():
    return RSA_KEY.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption())


def rsa_public_pem():
    return RSA_KEY.public_key().public_bytes(serialization.Encoding.PEM,
                                             serialization.PublicFormat.SubjectPublicKeyInfo)


def hs256_by_hand(key, claims):
    """A JWT signed with HS256 by ``key`` (bytes), which PyJWT would refuse to sign with a PEM
    public key: the key-confusion forgery."""
    def part(data):
        return base64.urlsafe_b64encode(data).rstrip(b"=")
    signed = part(b'{"alg":"HS256","typ":"JWT"}') + b"." + part(json.dumps(claims).encode())
    return (signed + b"." + part(hmac.new(key, signed, hashlib.sha256).digest())).decode()


def swapped_claims(signed, claims):
    """JWT ``signed``'s header and signature around JWT ``claims``' payload: a forgery."""
    header, _, signature = signed.split(".")
    return ".".join((header, claims.split(".")[1], signature))


INVALID_TOKENS = [
    ("expired", mint(publish=["*"], lifetime=-10), "expired"),
    ("forged with another secret", mint(secret="x" * 40, publish=["*"]), "signature"),
    ("alg none", jwt.encode({"sub": "backend", "exp": int(time.time()) + 300, "publish": ["*"]}, None,
                            algorithm="none"), "none"),
    ("RS256, a key this broker has not", mint(secret=rsa_private_pem(), algorithm="RS256", publish=["*"]),
     "RS256"),
    ("not a JWT", "not-a-jwt-at-all", "not a JWT"),
    ("claims changed", swapped_claims(mint(publish=["news"]), mint(publish=["*"])), "signature"),
]


@pytest.mark.parametrize("why, token, said", INVALID_TOKENS, ids=[why for why, _, _ in INVALID_TOKENS])
def test_a_jwt_that_does_not_verify_is_401_invalid_token_and_never_echoed(start_broker, why, token, said):
    broker = start_broker("--token-secret", SECRET, "--publish-token", STATIC, "--log-level", "debug")
    status, answer, challenge = publish(broker, token)
    assert (status, challenge) == (401, INVALID), (why, answer)
    assert said in answer["error"] and token not in answer["error"], (why, answer)
    assert broker.stats()["messages_in"] == 0
    # The refusal is logged (rate-limited), never with the token's text.
    wait_until(lambda: "publish refused a token" in broker.server.output)
    assert token not in broker.server.output


def test_a_public_key_checks_rs256_and_is_never_taken_for_an_hmac_secret(start_broker, tmp_path):
    pem = tmp_path / "publishers.pem"
    pem.write_bytes(rsa_public_pem())
    broker = start_broker("--token-public-key", str(pem))
    assert publish(broker, mint(secret=rsa_private_pem(), algorithm="RS256", publish=["*"]))[0] == 200
    forged = hs256_by_hand(rsa_public_pem(), {"sub": "backend", "exp": int(time.time()) + 300, "publish": ["*"]})
    status, answer, challenge = publish(broker, forged)
    assert (status, challenge) == (401, INVALID) and "HS256" in answer["error"], answer
    assert broker.stats()["messages_in"] == 1


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


def test_the_admin_drain_takes_neither_a_jwt_nor_the_publish_token(start_broker):
    broker = start_broker("--token-secret", SECRET, "--publish-token", STATIC, "--admin-token", "admin-token")
    for token in (mint(publish=["*"], count=["*"], rooms=["*"]), STATIC):
        assert broker.request("POST", "/admin/drain", b"", bearer(token)) == (403, {"error": "wrong token"})
    assert broker.stats()["drain"]["draining"] is False
    assert broker.request("POST", "/admin/drain", b"", bearer("admin-token"))[0] == 202
    # Drained (no client to spread), it exits by itself, before the fixture would signal it.
    assert broker.server.process.wait(10) == 0


class Publisher(threading.Thread):
    """Publishes through ``target`` (anything with an ``origin``) one message after another, each with its bearer ``token`` of
    the moment (the test switches it), until stopped; ``answers``: ``(token, status)`` of each,
    a connection that failed as status None. Nothing is retried: every failure counts."""

    def __init__(self, target, token):
        super().__init__(daemon=True)
        self.target = target
        self.token = token
        self.answers = []
        self.stopping = threading.Event()

    def run(self):
        while not self.stopping.is_set():
            token = self.token
            try:
                status = publish(self.target, token, str(len(self.answers)).encode())[0]
            except OSError:
                status = None
            self.answers.append((token, status))
            self.stopping.wait(0.02)

    def published_with(self, token, count):
        """Until ``count`` more publishes than now have been answered with ``token``."""
        target = sum(1 for used, _ in self.answers if used == token) + count
        wait_until(lambda: sum(1 for used, _ in self.answers if used == token) >= target, timeout=30)


def restarted(start_broker, proxy, broker, flags):
    """``broker`` drained out of haproxy's balancing, stopped, and started again on its port
    with ``flags``, as a deploy does: two clients hold its drain open (the second is closed
    halfway through a minute) until haproxy has taken it out, a second SIGTERM ends it."""
    port = urllib.parse.urlsplit(broker.url).port
    held = [WebSocketClient(broker.url).open() for _ in range(2)]
    wait_until(lambda: broker.stats()["connections_total"] == 2)
    process = broker.server.process
    process.send_signal(signal.SIGTERM)

    def taken_out():
        try:
            return proxy.server_states()[("brokers", "broker%d" % port)] != "UP"
        except OSError:
            return False

    wait_until(taken_out, timeout=15)
    process.send_signal(signal.SIGTERM)
    assert process.wait(10) == 0, broker.server.output[-4000:]
    for client in held:
        client.close()
    again = start_broker("--port", str(port), *flags)
    proxy.wait_ready(30)
    return again


# What is rotated: (flag, the new and the old together, the new alone, the bearer of the new,
# that of the old, the answer to the old once it is rotated out).
ROTATIONS = {
    "static publish tokens": ("--publish-token", NEW + " " + OLD, NEW, NEW, OLD, (403, "wrong token")),
    "token secrets": ("--token-secret", SECRET + " " + OLD_SECRET, SECRET, mint(publish=["*"], lifetime=3600),
                      mint(secret=OLD_SECRET, publish=["*"], lifetime=3600),
                      (401, "invalid token: its signature does not verify")),
}


@pytest.mark.parametrize("rotated", sorted(ROTATIONS))
def test_a_publisher_rotating_its_token_never_fails_a_publish(start_broker, tmp_path, rotated):
    """Deploy day for a new publish token or token secret: brokers behind the shipped haproxy
    config take the new and the old one; the backend switches to the new one; the brokers are
    restarted one by one with the new one only. Every publish along the way is answered 200."""
    flag, both, alone, new, old, refusal = ROTATIONS[rotated]
    deployment.require_haproxy()
    brokers = [start_broker(flag, both, "--drain-seconds", "60") for _ in range(2)]
    proxy = haproxy.HAProxy([urllib.parse.urlsplit(broker.url).port for broker in brokers], str(tmp_path),
                            source=deployment.HAPROXY_CONFIG)
    publisher = Publisher(types.SimpleNamespace(origin=proxy.publish_origin), old)
    try:
        proxy.wait_ready()
        publisher.start()
        publisher.published_with(old, 10)
        publisher.token = new
        publisher.published_with(new, 10)
        for n, broker in enumerate(brokers):
            brokers[n] = restarted(start_broker, proxy, broker, (flag, alone, "--drain-seconds", "60"))
            publisher.published_with(new, 10)
    finally:
        publisher.stopping.set()
        publisher.join(10)
        proxy.stop()
    failed = [(n, token == new, status) for n, (token, status) in enumerate(publisher.answers) if status != 200]
    assert failed == [], (failed[:10], len(publisher.answers))
    for broker in brokers:
        status, answer, _ = publish(broker, old)
        assert (status, answer["error"]) == refusal
        assert publish(broker, new)[0] == 200
