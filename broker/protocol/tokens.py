"""Tokens: what a JWT the operator's backend signed lets its bearer do in the broker.

A backend mints a token for a page, to join private rooms (``--private-rooms``, which
:mod:`broker.transports.subscriber` keeps), or for itself, to publish in some rooms only::

    {"sub": "donor-8812", "exp": 1767225600, "rooms": ["donors", "team-*"]}
    {"sub": "payments", "exp": 1767225600, "publish": ["donors"], "count": ["donors"]}

Rules this module keeps:

* A token is a JWT (RFC 7519) in compact form, at most :data:`MAX_TOKEN` characters, signed
  with HS256 by one of the broker's secrets (``--token-secret``), or with RS256 or ES256 by one
  of its public keys (``--token-public-key``). A key checks its own algorithm only: a secret
  HS256, an RSA key RS256, a P-256 key ES256. The header's ``alg`` picks which keys are tried,
  never which algorithm a key is used with, so an RSA public key is never taken for an HMAC
  secret (key confusion); ``none``, and any algorithm without a key here, is refused.
* Every key of the token's algorithm is tried, the first configured first (two at most: the
  key in use and the one being rotated out). The header's ``kid`` is not read: there is no
  "no such key" answer apart from "bad signature", nor a faster one.
* Verification is PyJWT's, never by hand. Required claims: ``sub``, a non-empty string, and
  ``exp``, seconds since the epoch, after now (no leeway). ``nbf`` and ``iat``, if given, are
  checked as PyJWT checks them. A token with ``aud`` is refused: the broker is no audience.
* The scopes are lists of patterns, each optional (none: nothing): ``rooms``, the rooms the
  bearer may join; ``publish``, those it may publish in (over HTTP, or a page in its private
  room); ``count``, those whose counters it may change over HTTP. A pattern is a room's name,
  a prefix of one followed by ``*`` (``team-*``), or ``*`` alone: every room, the default room
  too. At most :data:`MAX_PATTERNS` patterns a scope.
* A refusal is :class:`TokenRefused` (:class:`TokenExpired` for a token past its ``exp``),
  whose text says why and never holds the token.
* A page hands its token to the broker in its session, never in a URL (proxies log URLs, and
  sockjs-client repeats the URL's query in every request of a polling session): as a message
  whose text begins ``{"token":`` and is the JSON object ``{"token": "<JWT>"}``
  (:func:`token_in`), its first to join a private room, and again to refresh.
* No I/O: keys come as text (a secret) or PEM bytes (:func:`public_keys`).
"""

import json
import re
from typing import NamedTuple, Tuple

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.serialization import load_pem_public_key

MAX_TOKEN = 4096
MAX_PATTERNS = 64
# The shortest HS256 secret taken: RFC 7518 asks for a key as long as the hash (32 bytes).
MIN_SECRET = 32
SCOPES = ("rooms", "publish", "count")
ANY = "*"
_PATTERN = re.compile(r"\*|[A-Za-z0-9_.:-]{1,64}\*?")
# How a client's message that carries a token begins (JSON.stringify({token: t}) in a page).
MESSAGE_PREFIX = '{"token":'
_PEM = re.compile(rb"-----BEGIN PUBLIC KEY-----.+?-----END PUBLIC KEY-----", re.DOTALL)


class TokenRefused(Exception):
    """A token that gives nothing, and why (the exception's text, without the token)."""


class TokenExpired(TokenRefused):
    """A token past its ``exp``: its bearer needs a fresh one."""


def valid_pattern(text):
    """True for a pattern of rooms (see the module's rules)."""
    return isinstance(text, str) and _PATTERN.fullmatch(text) is not None


def token_in(message):
    """The token a client's ``message`` (text) carries, or None for any other message;
    :class:`TokenRefused` for a message that begins as a token's and is not one."""
    if not message.startswith(MESSAGE_PREFIX):
        return None
    try:
        value = json.loads(message)
    except ValueError:
        value = None
    if not isinstance(value, dict) or list(value) != ["token"] or not isinstance(value["token"], str):
        raise TokenRefused('a token message is the JSON object {"token": "<JWT>"}')
    return value["token"]


def matches(patterns, name):
    """True when one of ``patterns`` names room ``name`` (the default room: ``""``)."""
    for pattern in patterns:
        if pattern == name or pattern[-1] == ANY and name.startswith(pattern[:-1]):
            return True
    return False


class Grant(NamedTuple):
    """What a verified token lets its bearer do, until ``expires`` (seconds since the epoch)."""

    subject: str
    expires: float
    rooms: Tuple[str, ...] = ()
    publish: Tuple[str, ...] = ()
    count: Tuple[str, ...] = ()

    def may_join(self, name):
        return matches(self.rooms, name)

    def may_publish(self, name):
        return matches(self.publish, name)

    def may_count(self, name):
        return matches(self.count, name)


def public_keys(pem):
    """The ``(algorithm, key)`` of each public key of ``pem`` (bytes: one or more PEM blocks);
    ValueError for none, or a key of a kind no algorithm here takes."""
    blocks = _PEM.findall(pem)
    if not blocks:
        raise ValueError("no PEM public key (-----BEGIN PUBLIC KEY-----)")
    keys = []
    for block in blocks:
        key = load_pem_public_key(block)
        if isinstance(key, rsa.RSAPublicKey):
            keys.append(("RS256", key))
        elif isinstance(key, ec.EllipticCurvePublicKey) and isinstance(key.curve, ec.SECP256R1):
            keys.append(("ES256", key))
        else:
            raise ValueError("a public key for RS256 (RSA) or ES256 (EC P-256), not %s" % type(key).__name__)
    return keys


class Verifier:
    """Tokens checked against ``secrets`` (HS256) and ``keys`` (:func:`public_keys`' pairs)."""

    def __init__(self, secrets=(), keys=()):
        for secret in secrets:
            if len(secret.encode()) < MIN_SECRET:
                raise ValueError("a token secret of at least %d bytes" % MIN_SECRET)
        self._keys = {}
        for secret in secrets:
            self._keys.setdefault("HS256", []).append(secret.encode())
        for algorithm, key in keys:
            self._keys.setdefault(algorithm, []).append(key)
        if not self._keys:
            raise ValueError("no secret and no public key to check tokens with")
        self.algorithms = tuple(sorted(self._keys))

    def verify(self, token):
        """The :class:`Grant` of ``token`` (text); :class:`TokenRefused` or :class:`TokenExpired`."""
        if not isinstance(token, str) or len(token) > MAX_TOKEN:
            raise TokenRefused("a token is a text of at most %d characters" % MAX_TOKEN)
        try:
            algorithm = jwt.get_unverified_header(token).get("alg")
        except jwt.InvalidTokenError:
            raise TokenRefused("not a JWT") from None
        keys = self._keys.get(algorithm) if isinstance(algorithm, str) else None
        if not keys:
            raise TokenRefused("signed with %.16r: this broker checks %s" % (algorithm, ", ".join(self.algorithms)))
        for key in keys:
            try:
                claims = jwt.decode(token, key, algorithms=[algorithm], options={"require": ["exp", "sub"]})
            except jwt.InvalidSignatureError:
                continue
            except jwt.ExpiredSignatureError:
                raise TokenExpired("expired") from None
            except jwt.InvalidTokenError as error:
                raise TokenRefused(str(error)[:100]) from None
            except OverflowError:  # a time claim of 1e400 (infinite), which PyJWT before 2.10 lets through
                raise TokenRefused("a time claim out of range") from None
            return _grant(claims)
        raise TokenRefused("its signature does not verify")


def _grant(claims):
    """The :class:`Grant` of verified ``claims``; TokenRefused for a claim of the wrong shape."""
    subject = claims["sub"]
    if not isinstance(subject, str) or not subject:
        raise TokenRefused("sub: a non-empty string")
    scopes = {}
    for scope in SCOPES:
        patterns = claims.get(scope, [])
        if not isinstance(patterns, list) or len(patterns) > MAX_PATTERNS or \
                not all(valid_pattern(pattern) for pattern in patterns):
            raise TokenRefused("%s: a list of at most %d room names, prefixes ending in *, or *"
                               % (scope, MAX_PATTERNS))
        scopes[scope] = tuple(patterns)
    return Grant(subject, float(claims["exp"]), **scopes)
