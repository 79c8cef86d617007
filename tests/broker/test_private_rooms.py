"""Private rooms on every transport: a session naming one joins nothing until its first message,
a token (JWT) naming it; a bad, expired or missing token closes it (3016, 3017, 3015), a valid
one joins it; a token expiring mid-session closes it unless refreshed in-band, and a refresh
loses no message. Tokens are never published and never logged.

One broker serves the module (a secret being rotated in and out, and an RSA and a P-256 public
key), its log at DEBUG: at its end its output holds none of the tokens the tests sent."""

import base64
import hashlib
import hmac
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from checkout import ROOT
from loadtest.contenders.child_process import launch
from running_broker import RunningBroker
from sockjs_clients import ALL, RawWebSocketClient, WebSocketClient, XhrPollingClient, closed_with, wait_until
from test_start_up_errors import start_up_refusal

SECRET, OLD_SECRET = "s" * 32 + "-the-one-in-use", "o" * 32 + "-rotated-out"
PUBLISH = {"Authorization": "Bearer publish-t"}
TRANSPORTS = pytest.mark.parametrize("transport", ALL, ids=lambda transport: transport.transport)
# Longer than the wait for a first token (close_codes.TOKEN_WAIT_S, 10 s) and its sweep.
SLOW = 25.0
SENT = []


def private_key(kind):
    return rsa.generate_private_key(65537, 2048) if kind == "rsa" else ec.generate_private_key(ec.SECP256R1())


def pem_of(key):
    return key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


KEYS = {"rsa": private_key("rsa"), "ec": private_key("ec")}


def claims(rooms=("team-*",), sub="page-1", ahead=60, **more):
    return dict({"sub": sub, "exp": int(time.time()) + ahead, "rooms": list(rooms)}, **more)


def token(key=SECRET, algorithm="HS256", **given):
    text = jwt.encode(claims(**given), key, algorithm=algorithm)
    SENT.append(text)
    return text


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def hs256_by_hand(payload, key):
    """An HS256 JWT MAC'd with ``key`` (bytes), which PyJWT itself refuses to do with a PEM."""
    signed = "%s.%s" % (b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode()), b64(json.dumps(payload).encode()))
    text = signed + "." + b64(hmac.new(key, signed.encode(), hashlib.sha256).digest())
    SENT.append(text)
    return text


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    """A broker whose rooms team-* are private, its clients' tokens checked against a secret
    and its old one, an RSA key and a P-256 key; at its end, no token sent shows in its output."""
    keys = tmp_path_factory.mktemp("keys") / "tokens.pem"
    keys.write_bytes(pem_of(KEYS["rsa"]) + pem_of(KEYS["ec"]))
    server = launch([sys.executable, "-m", "broker", "--host", "127.0.0.1", "--port", "0", "--log-level", "debug",
                     "--drain-seconds", "0", "--replay", "0", "--publish-token", "publish-t",
                     "--token-secret", "%s %s" % (SECRET, OLD_SECRET), "--token-public-key", str(keys),
                     "--private-rooms", "team-*"], env={"PYTHONPATH": ROOT})
    yield RunningBroker(server)
    server.stop()
    assert "Traceback" not in server.output, server.output[-4000:]
    shown = [part for text in SENT for part in (text, text.rsplit(".", 1)[-1]) if len(part) > 16 and part in server.output]
    assert not shown, "the broker logged tokens"


def publish(broker, room, text):
    status, answer = broker.request("POST", "/publish?room=%s" % room, text.encode(), PUBLISH)
    assert status == 200, answer
    return answer


def send_token(client, text):
    client.send(json.dumps({"token": text}))


def received(client, count):
    """The next ``count`` messages of ``client``, a raw websocket's JSON texts read."""
    messages = client.collect(count)
    if isinstance(client, RawWebSocketClient):
        return [json.loads(m) if m.startswith("{") else m for m in messages]
    return messages


def joined(transport, broker, rooms="team-a", text=None, query="positions=1", timeout=5.0):
    """A session of ``rooms`` that sent its token (a valid one by default) and was told its start."""
    client = transport(broker.url, query="rooms=%s&%s" % (rooms, query), timeout=timeout).open()
    send_token(client, text or token())
    start = received(client, 1)[0]
    assert start.get("c") == "open", start
    return client


def tokens_stats(broker):
    return broker.stats()["session_tokens"]


@TRANSPORTS
def test_a_private_room_closes_a_session_whose_first_message_is_no_token(broker, transport):
    before = tokens_stats(broker)["refused"]["required"]
    with transport(broker.url, query="rooms=team-a") as client:
        client.send("let me in")
        assert closed_with(client)[0] == 3015
    assert tokens_stats(broker)["refused"]["required"] == before + 1


def forged(kind):
    if kind == "alg-none":
        text = jwt.encode(claims(), None, algorithm="none")
        SENT.append(text)
        return text
    if kind == "wrong-secret":
        return token(key="w" * 40)
    if kind == "wrong-rsa-key":
        return token(key=private_key("rsa"), algorithm="RS256")
    if kind == "key-confusion":
        return hs256_by_hand(claims(), pem_of(KEYS["rsa"]))
    if kind == "out-of-scope":
        return token(rooms=["team-b", "lobby"])
    if kind == "not-a-jwt":
        return "not.a.jwt"
    raise AssertionError(kind)


REFUSALS = [("expired", 3017), ("alg-none", 3016), ("wrong-secret", 3016), ("wrong-rsa-key", 3016),
            ("key-confusion", 3016), ("out-of-scope", 3016), ("not-a-jwt", 3016)]


@TRANSPORTS
def test_a_private_room_closes_a_session_whose_token_is_expired_forged_or_out_of_scope(broker, transport):
    texts = [(token(ahead=-5) if kind == "expired" else forged(kind), kind, code) for kind, code in REFUSALS]
    for text, kind, code in texts:
        with transport(broker.url, query="rooms=team-a") as client:
            send_token(client, text)
            assert closed_with(client)[0] == code, kind


@TRANSPORTS
def test_a_token_message_of_the_wrong_shape_is_refused(broker, transport):
    with transport(broker.url, query="rooms=team-a") as client:
        client.send('{"token": 5}')
        assert closed_with(client)[0] == 3016


@TRANSPORTS
def test_a_valid_token_joins_its_private_rooms_and_they_deliver(broker, transport):
    before = tokens_stats(broker)["accepted"]
    with closing(joined(transport, broker)) as client:
        publish(broker, "team-a", "t1")
        publish(broker, "team-a", "t2")
        assert [m["d"] for m in received(client, 2)] == ["t1", "t2"]
    assert tokens_stats(broker)["accepted"] == before + 1


@pytest.mark.parametrize("key, algorithm", [(SECRET, "HS256"), (OLD_SECRET, "HS256"), (KEYS["rsa"], "RS256"),
                                            (KEYS["ec"], "ES256")], ids=["secret", "old-secret", "rs256", "es256"])
def test_each_key_of_the_broker_signs_tokens_it_takes(broker, key, algorithm):
    with closing(joined(WebSocketClient, broker, text=token(key=key, algorithm=algorithm))) as client:
        publish(broker, "team-a", "keyed")
        assert received(client, 1)[0]["d"] == "keyed"


def at_once(clients, work):
    """``work(client)`` for each of ``clients`` at once, each in a thread of its own: a polling
    client's session lives only while it polls, or for --disconnect-delay between two polls.
    Returns the pending results, in order."""
    pool = ThreadPoolExecutor(len(clients))
    pending = [pool.submit(work, client) for client in clients]
    pool.shutdown(wait=False)  # its threads end with their work
    return pending


def test_a_token_expiring_mid_session_closes_it_on_every_transport(broker):
    """Every transport's session at once, so that the test waits for one expiry, not seven."""
    before = tokens_stats(broker)["expired"]
    short = token(ahead=3)
    clients = [joined(transport, broker, rooms="team-x", text=short, timeout=SLOW) for transport in ALL]
    try:
        publish(broker, "team-x", "before")
        ends = at_once(clients, lambda client: (received(client, 1)[0]["d"], closed_with(client)[0]))
        assert [end.result() for end in ends] == [("before", 3017)] * len(ALL)
    finally:
        for client in clients:
            client.close()
    assert time.time() >= expiry(short)
    assert tokens_stats(broker)["expired"] == before + len(ALL)


def test_a_token_refreshed_before_it_expires_keeps_its_session_with_every_message_once_in_order(broker):
    before = tokens_stats(broker)["refreshed"]
    first = token(ahead=3)
    clients = [joined(transport, broker, rooms="team-y", text=first, timeout=SLOW) for transport in ALL]
    try:
        publish(broker, "team-y", "m1")
        got = at_once(clients, lambda client: received(client, 4))
        for client in clients:
            send_token(client, token(ahead=60))
        publish(broker, "team-y", "m2")
        wait_until(lambda: tokens_stats(broker)["refreshed"] == before + len(ALL))
        publish(broker, "team-y", "m3")
        # Past the first token's exp and the sweep's second after it.
        wait_until(lambda: time.time() > expiry(first) + 1.5, timeout=10)
        publish(broker, "team-y", "m4")
        for client, messages in zip(clients, got):
            assert [(m["o"], m["d"]) for m in messages.result()] == [("1", "m1"), ("2", "m2"), ("3", "m3"),
                                                                     ("4", "m4")], client.transport
    finally:
        for client in clients:
            client.close()


@TRANSPORTS
def test_a_refresh_of_another_subject_closes_the_session(broker, transport):
    with closing(joined(transport, broker)) as client:
        send_token(client, token(sub="someone-else"))
        assert closed_with(client)[0] == 3016


@TRANSPORTS
def test_a_resume_needs_the_token_again(broker, transport):
    with closing(joined(transport, broker, rooms="team-r")) as client:
        answer = publish(broker, "team-r", "r1")
        assert received(client, 1)[0]["d"] == "r1"
    publish(broker, "team-r", "r2")
    position = "positions=1&epoch=%s&since=1" % answer["position"]["epoch"]
    with transport(broker.url, query="rooms=team-r&" + position) as again:
        again.send("it is me again")
        assert closed_with(again)[0] == 3015
    with transport(broker.url, query="rooms=team-r&" + position) as again:
        send_token(again, token())
        resumed = received(again, 2)
        assert resumed[0]["c"] == "resumed" and resumed[1]["d"] == "r2"


@TRANSPORTS
def test_public_rooms_need_no_token_and_check_one_sent(broker, transport):
    with transport(broker.url, query="rooms=lobby&positions=1") as lobby, \
            transport(broker.url, query="positions=1") as default:
        # Joined at once: no token asked.
        assert received(lobby, 1)[0]["c"] == "open"
        assert received(default, 1)[0]["c"] == "open"
        publish(broker, "lobby", "l1")
        assert broker.request("POST", "/publish", b"d1", PUBLISH)[0] == 200
        assert received(lobby, 1)[0]["d"] == "l1"
        assert received(default, 1)[0]["d"] == "d1"
        send_token(lobby, token())
        send_token(default, token(key="w" * 40))
        assert closed_with(default)[0] == 3016
        publish(broker, "lobby", "l2")
        assert received(lobby, 1)[0]["d"] == "l2", "a valid token changes nothing, and is not published"


def expiry(text):
    return jwt.decode(text, options={"verify_signature": False})["exp"]


def test_a_public_session_is_never_closed_for_its_tokens_exp(broker):
    with WebSocketClient(broker.url, query="rooms=lobby-stays&positions=1") as lobby:
        assert lobby.receive()[0]["c"] == "open"
        short = token(ahead=1)
        send_token(lobby, short)
        wait_until(lambda: time.time() > expiry(short) + 1.5, timeout=10)
        publish(broker, "lobby-stays", "still here")
        assert lobby.receive()[0]["d"] == "still here"


def test_a_page_publishes_in_its_private_room_only_with_publish_scope(broker):
    with closing(joined(WebSocketClient, broker, rooms="team-p")) as listener, \
            closing(joined(WebSocketClient, broker, rooms="team-p", text=token(publish=["team-p"]))) as writer:
        dropped = tokens_stats(broker)["private_sends_dropped"]
        listener.send("not allowed")
        wait_until(lambda: tokens_stats(broker)["private_sends_dropped"] == dropped + 1)
        writer.send("allowed")
        assert listener.receive()[0]["d"] == "allowed"
        assert writer.receive()[0]["d"] == "allowed"


def test_a_session_of_several_rooms_joins_with_one_token_and_never_publishes_it(broker):
    with WebSocketClient(broker.url, query="rooms=lobby-m") as lobby, \
            WebSocketClient(broker.url, query="rooms=team-m,lobby-m&positions=1") as both:
        send_token(both, token())
        assert [m["c"] for m in both.collect(2)] == ["open", "open"]
        dropped = broker.stats()["multiplexed_sends_dropped"]
        refreshed = tokens_stats(broker)["refreshed"]
        send_token(both, token())
        wait_until(lambda: tokens_stats(broker)["refreshed"] == refreshed + 1)
        publish(broker, "lobby-m", "l")
        publish(broker, "team-m", "t")
        assert lobby.receive() == ["l"], "the token was not published"
        assert sorted((m["r"], m["d"]) for m in both.collect(2)) == [("lobby-m", "l"), ("team-m", "t")]
        assert broker.stats()["multiplexed_sends_dropped"] == dropped


def test_the_figures_are_in_stats_and_metrics(broker):
    stats = tokens_stats(broker)
    assert set(stats) == {"waiting", "holding", "accepted", "refreshed", "refused", "expired",
                          "private_sends_dropped"}
    assert set(stats["refused"]) == {"required", "refused", "expired"}
    metrics = broker.request("GET", "/metrics")[1]
    for name in ("session_tokens_accepted_total", 'session_tokens_refused_total{reason="refused"}',
                 "session_tokens_refreshed_total", "session_tokens_expired_total", "private_sends_dropped_total"):
        assert "sockjs_broker_" + name in metrics, name


def test_a_session_sending_no_token_is_closed_after_the_wait_on_every_transport(broker):
    """Every transport's session at once: one wait (close_codes.TOKEN_WAIT_S), not seven. Waiting,
    a session holds no room and counts as a session."""
    clients = [transport(broker.url, query="rooms=team-w", timeout=SLOW).open() for transport in ALL]
    try:
        ends = at_once(clients, lambda client: closed_with(client)[0])
        wait_until(lambda: tokens_stats(broker)["waiting"] >= len(ALL))
        assert publish(broker, "team-w", "unseen")["recipients"] == 0
        assert [end.result() for end in ends] == [3015] * len(ALL)
    finally:
        for client in clients:
            client.close()


class PollsOnFreshConnections(XhrPollingClient):
    """Each poll on a connection of its own: only the sessions count against the address's limit."""

    keep_alive = False


def test_a_session_waiting_for_its_token_counts_in_the_limits_and_its_tokens_in_the_client_rate(start_broker):
    broker = start_broker("--token-secret", SECRET, "--private-rooms", "team-*", "--max-connections", "3",
                          "--client-rate", "1")
    waiting = [PollsOnFreshConnections(broker.url, query="rooms=team-a&positions=1").open() for _ in range(3)]
    # Their requests' connections closed: only this request's is open.
    wait_until(lambda: broker.stats()["tcp_connections"] == 1)
    refused = PollsOnFreshConnections(broker.url, query="rooms=lobby").open()
    assert closed_with(refused)[0] == 3011
    assert broker.stats()["refused"]["max_sessions"] == 1
    send_token(waiting[0], token())
    assert waiting[0].receive()[0]["c"] == "open"
    # Refreshes are messages as any other: a burst of 2 (twice --client-rate), and 4 more
    # than the seconds since the join could have added.
    waiting[0].send(*[json.dumps({"token": token()}) for _ in range(6)])
    assert closed_with(waiting[0])[0] == 3009
    assert broker.stats()["rate_limited_disconnects"] == 1


def test_feed_mode_takes_the_token_and_publishes_nothing(start_broker):
    broker = start_broker("--token-secret", SECRET, "--private-rooms", "team-*", "--no-client-publish",
                          "--publish-token", "publish-t")
    with closing(joined(XhrPollingClient, broker)) as client:
        client.send("dropped", json.dumps({"token": token()}))
        publish(broker, "team-a", "fed")
        assert received(client, 1) == [{"o": "1", "d": "fed"}]
        send_token(client, token(sub="another"))
        assert closed_with(client)[0] == 3016
    assert broker.stats()["messages_in"] == 1


def test_without_a_token_key_a_token_message_is_refused_never_relayed(start_broker):
    """A page given getToken against a broker without a key: its token must reach no one."""
    broker = start_broker("--publish-token", "publish-t")
    text = json.dumps({"token": "eyJhbGciOiJIUzI1NiJ9.e30.x"})
    with WebSocketClient(broker.url, query="rooms=team-a") as listener:
        with WebSocketClient(broker.url, query="rooms=team-a") as client:
            client.send(text)
            assert closed_with(client)[0] == 3016
        # The listener got nothing of it: the next message is the first it receives.
        publish(broker, "team-a", "after")
        assert listener.receive() == ["after"]
    assert broker.stats()["messages_in"] == 1


@pytest.mark.parametrize("content, said", [
    (None, "No such file or directory"),
    (pem_of(ed25519.Ed25519PrivateKey.generate()), "not Ed25519PublicKey"),
    (b"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n", "Could not deserialize key data"),
], ids=["missing", "ed25519", "broken-pem"])
def test_a_public_key_file_the_broker_cannot_use_stops_it_with_one_line(tmp_path, content, said):
    path = tmp_path / "keys.pem"
    if content is not None:
        path.write_bytes(content)
    line = start_up_refusal(["--token-public-key", str(path), "--private-rooms", "team-*"])
    assert "--token-public-key (BROKER_TOKEN_PUBLIC_KEY) %s: " % path in line and said in line, line
