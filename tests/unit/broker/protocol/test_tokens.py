"""Tokens (JWT) as broker.protocol.tokens checks them: each key with its own algorithm, the
claims required and refused, the scopes' shapes, the token message, and the patterns of rooms."""

import base64
import hashlib
import hmac
import json
import time

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from broker.protocol import tokens
from broker.protocol.tokens import Grant, TokenExpired, TokenRefused, Verifier

SECRET, OLD_SECRET = "k" * 32, "rotated-out-" + "o" * 24


def pem_of(private):
    return private.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


@pytest.fixture(scope="module")
def rsa_key():
    return rsa.generate_private_key(65537, 2048)


@pytest.fixture(scope="module")
def ec_key():
    return ec.generate_private_key(ec.SECP256R1())


def claims(**given):
    return dict({"sub": "page-1", "exp": int(time.time()) + 60, "rooms": ["team-*"]}, **given)


def signed(key=SECRET, algorithm="HS256", **given):
    return jwt.encode(claims(**given), key, algorithm=algorithm)


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def by_hand(header, payload, key=b""):
    """A JWT of ``header`` and ``payload`` MAC'd with HS256 by ``key`` (bytes), as PyJWT refuses to
    when the key is a PEM; ``key`` None: no signature at all."""
    text = "%s.%s" % (b64(json.dumps(header).encode()), b64(json.dumps(payload).encode()))
    return text + "." + ("" if key is None else b64(hmac.new(key, text.encode(), hashlib.sha256).digest()))


def refusal(verifier, token):
    """The text of the refusal of ``token``, which never holds the token or its signature."""
    with pytest.raises(TokenRefused) as refused:
        verifier.verify(token)
    text = str(refused.value)
    assert token not in text and (len(token.rsplit(".", 1)[-1]) < 8 or token.rsplit(".", 1)[-1] not in text)
    return refused.value


# Keys and algorithms.

def test_either_of_two_secrets_verifies_and_a_third_does_not():
    verifier = Verifier([SECRET, OLD_SECRET])
    assert verifier.verify(signed(SECRET)).subject == "page-1"
    assert verifier.verify(signed(OLD_SECRET)).subject == "page-1"
    assert "signature" in str(refusal(verifier, signed("x" * 40)))
    assert verifier.algorithms == ("HS256",)


def test_a_secret_shorter_than_the_hash_or_no_key_at_all_is_refused():
    with pytest.raises(ValueError):
        Verifier(["s" * (tokens.MIN_SECRET - 1)])
    with pytest.raises(ValueError):
        Verifier()


def test_rs256_and_es256_verify_with_their_public_keys(rsa_key, ec_key):
    keys = tokens.public_keys(pem_of(rsa_key) + b"\n" + pem_of(ec_key))
    assert [algorithm for algorithm, _ in keys] == ["RS256", "ES256"]
    verifier = Verifier(keys=keys)
    assert verifier.algorithms == ("ES256", "RS256")
    assert verifier.verify(signed(rsa_key, "RS256")).rooms == ("team-*",)
    assert verifier.verify(signed(ec_key, "ES256", sub="backend")).subject == "backend"


def test_a_token_signed_by_another_key_of_the_same_kind_is_refused(rsa_key, ec_key):
    verifier = Verifier(keys=tokens.public_keys(pem_of(rsa_key) + pem_of(ec_key)))
    assert "signature" in str(refusal(verifier, signed(rsa.generate_private_key(65537, 2048), "RS256")))
    assert "signature" in str(refusal(verifier, signed(ec.generate_private_key(ec.SECP256R1()), "ES256")))


def test_an_algorithm_without_a_key_here_is_refused_before_any_key_is_tried(rsa_key, ec_key):
    secrets_only = Verifier([SECRET])
    assert "this broker checks HS256" in str(refusal(secrets_only, signed(rsa_key, "RS256")))
    assert "this broker checks HS256" in str(refusal(secrets_only, signed(ec_key, "ES256")))
    rsa_only = Verifier(keys=tokens.public_keys(pem_of(rsa_key)))
    refusal(rsa_only, signed(SECRET))
    refusal(rsa_only, signed(rsa_key, "RS512"))


def test_alg_none_is_refused_with_or_without_a_signature():
    verifier = Verifier([SECRET])
    unsigned = jwt.encode(claims(), None, algorithm="none")
    assert "'none'" in str(refusal(verifier, unsigned))
    refusal(verifier, by_hand({"alg": "none"}, claims(), key=None))
    refusal(verifier, by_hand({"alg": "None"}, claims(), key=None))
    refusal(verifier, by_hand({"typ": "JWT"}, claims(), key=SECRET.encode()))  # no alg at all
    refusal(verifier, by_hand({"alg": ["HS256"]}, claims(), key=SECRET.encode()))


def test_an_hs256_token_macd_with_the_rsa_public_key_is_refused_key_confusion(rsa_key):
    """The classic confusion: the RSA key's PEM, public, used as an HMAC secret."""
    pem = pem_of(rsa_key)
    confused = by_hand({"alg": "HS256", "typ": "JWT"}, claims(), key=pem)
    assert "this broker checks RS256" in str(refusal(Verifier(keys=tokens.public_keys(pem)), confused))
    # With a secret of its own too, HS256 is checked against that secret only.
    assert "signature" in str(refusal(Verifier([SECRET], tokens.public_keys(pem)), confused))


def test_the_kid_is_not_read(rsa_key):
    verifier = Verifier([OLD_SECRET, SECRET])
    token = jwt.encode(claims(), SECRET, algorithm="HS256", headers={"kid": "no-such-key"})
    assert verifier.verify(token).subject == "page-1"


# Claims.

def test_an_expired_token_is_told_apart_as_expired():
    verifier = Verifier([SECRET])
    expired = refusal(verifier, signed(exp=int(time.time()) - 1))
    assert isinstance(expired, TokenExpired) and str(expired) == "expired"


def test_a_token_not_valid_yet_is_refused_not_expired():
    refused = refusal(Verifier([SECRET]), signed(nbf=int(time.time()) + 600))
    assert not isinstance(refused, TokenExpired)


def test_a_token_with_an_audience_is_refused_the_broker_is_none():
    refusal(Verifier([SECRET]), signed(aud="sockjs-broker"))


@pytest.mark.parametrize("claim", ["sub", "exp"])
def test_sub_and_exp_are_required(claim):
    given = claims()
    del given[claim]
    refusal(Verifier([SECRET]), jwt.encode(given, SECRET, algorithm="HS256"))


@pytest.mark.parametrize("subject", ["", 42, ["page-1"], None])
def test_a_subject_is_a_non_empty_string(subject):
    token = by_hand({"alg": "HS256", "typ": "JWT"}, claims(sub=subject), key=SECRET.encode())
    refusal(Verifier([SECRET]), token)


def test_an_exp_that_is_not_a_number_is_refused():
    token = by_hand({"alg": "HS256", "typ": "JWT"}, claims(exp="tomorrow"), key=SECRET.encode())
    refusal(Verifier([SECRET]), token)


def test_a_grant_holds_the_subject_its_expiry_and_each_scope():
    exp = int(time.time()) + 60
    grant = Verifier([SECRET]).verify(signed(exp=exp, rooms=["a", "team-*"], publish=["a"], count=["*"]))
    assert grant == Grant("page-1", float(exp), ("a", "team-*"), ("a",), ("*",))
    assert Verifier([SECRET]).verify(signed(exp=exp, rooms=[])) == Grant("page-1", float(exp)), "each scope: none"


@pytest.mark.parametrize("scope", tokens.SCOPES)
@pytest.mark.parametrize("value", ["team-*", {"team-*": True}, [5], ["team-**"], ["a b"], ["*team"], [""],
                                   ["x" * 65], ["team-*"] * (tokens.MAX_PATTERNS + 1), None],
                         ids=["a-text", "an-object", "a-number", "two-stars", "a-space", "star-first", "empty",
                              "too-long", "too-many", "null"])
def test_a_scope_of_the_wrong_shape_is_refused(scope, value):
    assert scope in str(refusal(Verifier([SECRET]), signed(**{scope: value})))


def test_a_scope_takes_up_to_its_most_patterns():
    patterns = ["room-%d" % n for n in range(tokens.MAX_PATTERNS)]
    assert Verifier([SECRET]).verify(signed(publish=patterns)).publish == tuple(patterns)


# Sizes and shapes of the token itself.

def test_an_oversized_token_is_refused_before_it_is_read():
    big = signed(filler="x" * tokens.MAX_TOKEN)
    assert len(big) > tokens.MAX_TOKEN
    assert "at most" in str(refusal(Verifier([SECRET]), big))


@pytest.mark.parametrize("token", ["", "not-a-jwt", "a.b.c", "....", "eyJhbGciOiJIUzI1NiJ9..", None, 42, b"a.b.c"])
def test_anything_but_a_jwt_is_refused(token):
    with pytest.raises(TokenRefused):
        Verifier([SECRET]).verify(token)


# The token message.

@pytest.mark.parametrize("message, expected", [
    ('{"token":"a.b.c"}', "a.b.c"),
    ('{"token": "a.b.c"}', "a.b.c"),
    ('{"token":""}', ""),
    ("hello", None),
    ('{"tokens":"a.b.c"}', None),
    (' {"token":"a.b.c"}', None),  # not its beginning: a message as any other
    ('{"room":"a","token":"a.b.c"}', None),
    ("", None),
])
def test_a_message_beginning_as_a_token_message_is_read_for_its_token(message, expected):
    assert tokens.token_in(message) == expected


@pytest.mark.parametrize("message", ['{"token":5}', '{"token":null}', '{"token":"a.b.c","rooms":["x"]}',
                                     '{"token":"a.b.c"', '{"token":["a.b.c"]}', '{"token":"a"}{"token":"b"}'])
def test_a_message_beginning_as_a_token_message_and_not_one_is_refused(message):
    with pytest.raises(TokenRefused):
        tokens.token_in(message)


# Patterns of rooms.

@pytest.mark.parametrize("pattern, name, matched", [
    ("team-*", "team-a", True),
    ("team-*", "team-", True),
    ("team-*", "teams", False),
    ("team-*", "a-team-b", False),
    ("team-a", "team-a", True),
    ("team-a", "team-ab", False),
    ("*", "anything", True),
    ("*", "", True),  # the default room: only by *
    ("team-*", "", False),
    ("team-a", "", False),
])
def test_a_pattern_names_a_room_its_prefix_or_every_room(pattern, name, matched):
    assert tokens.matches((pattern,), name) is matched
    grant = Grant("s", 0.0, rooms=(pattern,), publish=(pattern,), count=(pattern,))
    assert grant.may_join(name) is grant.may_publish(name) is grant.may_count(name) is matched


def test_each_scope_grants_only_its_own_right():
    grant = Grant("s", 0.0, rooms=("a",), publish=("b",), count=("c",))
    assert [grant.may_join("a"), grant.may_publish("a"), grant.may_count("a")] == [True, False, False]
    assert [grant.may_join("b"), grant.may_publish("b"), grant.may_count("b")] == [False, True, False]
    assert [grant.may_join("c"), grant.may_publish("c"), grant.may_count("c")] == [False, False, True]
    assert not Grant("s", 0.0).may_join("a")


@pytest.mark.parametrize("pattern, valid", [("*", True), ("team-*", True), ("a.b:c_d-e", True), ("x" * 64, True),
                                            ("x" * 64 + "*", True), ("x" * 65, False), ("", False), ("**", False),
                                            ("*a", False), ("a*b", False), ("a b", False), (5, False)])
def test_valid_patterns(pattern, valid):
    assert tokens.valid_pattern(pattern) is valid


# Public keys.

def test_a_pem_without_a_public_key_or_with_a_key_of_no_algorithm_here_is_refused():
    with pytest.raises(ValueError, match="no PEM public key"):
        tokens.public_keys(b"nothing here")
    for private in (ed25519.Ed25519PrivateKey.generate(), ec.generate_private_key(ec.SECP384R1())):
        with pytest.raises(ValueError, match="RS256 .RSA. or ES256"):
            tokens.public_keys(pem_of(private))
    with pytest.raises(ValueError):
        tokens.public_keys(b"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")


@pytest.mark.parametrize("claim", ["exp", "nbf", "iat"])
def test_a_time_claim_of_infinity_is_refused_not_raised(claim):
    """1e400 is a JSON number Python reads as infinity: a signed token carrying it is refused,
    never an OverflowError out of the broker's message handler."""
    payload = json.dumps(dict(claims(), **{claim: "INFINITE"})).replace('"INFINITE"', "1e400")
    text = "%s.%s" % (b64(b'{"alg":"HS256","typ":"JWT"}'), b64(payload.encode()))
    token = text + "." + b64(hmac.new(SECRET.encode(), text.encode(), hashlib.sha256).digest())
    assert not isinstance(refusal(Verifier([SECRET]), token), TokenExpired)
