"""Idempotent publish: a backend that retries ``POST /publish`` publishes once.

Rules this module keeps:

* A request names itself with an ``Idempotency-Key`` header: 1 to
  :data:`MAX_KEY_LENGTH` printable ASCII characters. The same key within the
  window publishes once; every retry gets the first answer again (its
  recipients and the message's position), marked ``Idempotent-Replayed: true``.
* A key is bound to its request's :func:`fingerprint` (the body and whether it
  is JSON): the same key with another request is refused (422), never
  published and never an answer of another message.
* For a broker alone the keys live here (:class:`Window`), at most
  ``max_keys`` of them: past that the oldest is forgotten before its window
  ends, and counted. In a cluster they live in Redis, beside the stream, set
  in the same script that appends the message (:mod:`broker.cluster.room_in_redis`),
  so a publish and its key are never one without the other; there too at most
  :data:`MAX_KEYS` a room, each kept under its :func:`digest`, so that a
  record's bytes do not depend on its key's length.
* Nothing here does I/O or reads a clock: the caller gives the time.
"""

import collections
import hashlib

from broker.core import figures
from broker.core.figures import COUNTER, Figure, Metric

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
MAX_KEY_LENGTH = 255
MAX_KEYS = 100000


class Answer(collections.namedtuple("Answer", "fingerprint recipients epoch offset value", defaults=(None,))):
    """What a publish answered: kept for its retries; ``value``: a counter's total after it, if any."""

    def record(self):
        """The text a cluster keeps for it, but the offset (Redis appends it)."""
        return "%s %d %s" % (self.fingerprint, self.recipients, self.epoch)

    @classmethod
    def parse(cls, text):
        """The answer kept as ``text``: a :meth:`record`, its offset and, for a counter's, its total."""
        fingerprint, recipients, epoch, offset, *value = text.split(" ")
        return cls(fingerprint, int(recipients), epoch, offset, *value)


class KeyReused(Exception):
    """An idempotency key given again with another request (another fingerprint): refused."""

    def __init__(self):
        super().__init__("this %s was used with another request" % HEADER)


def valid_key(key):
    """True for a key this module accepts (see the rules)."""
    return 0 < len(key) <= MAX_KEY_LENGTH and all(" " < c <= "~" for c in key)


def digest(key):
    """What a cluster keeps for ``key``: the same 32 characters for a key of any length."""
    return hashlib.sha256(key.encode()).hexdigest()[:32]


def fingerprint(body, is_json, conflating_key=None):
    """What binds a key to its request: a digest of the body, its kind and its conflating key."""
    kind = (b"json:" if is_json else b"text:") + (conflating_key or "").encode() + b":"
    return hashlib.sha256(kind + body).hexdigest()[:32]


class Window:
    """The keys published within the last ``seconds``, at most ``max_keys``
    (a broker alone), and the counts of retries answered again (``replayed``)
    and of keys reused with another request (``refused``), in every broker."""

    def __init__(self, seconds, max_keys=MAX_KEYS):
        self.seconds = seconds
        self.max_keys = max_keys
        self._answers = collections.OrderedDict()
        self.replayed = 0
        self.refused = 0
        self.evicted = 0

    def __len__(self):
        return len(self._answers)

    def stats(self):
        return figures.stats_of(self)

    FIGURES = (
        Figure("keys", len),
        Figure("replayed", "replayed", Metric("idempotent_replays", COUNTER, "POST /publish retries answered "
                                              "again, publishing nothing (Idempotency-Key)")),
        Figure("refused", "refused", Metric("idempotent_refusals", COUNTER, "POST /publish refused (422): an "
                                            "Idempotency-Key reused with another request")),
        Figure("evicted", "evicted"),
        Figure("window_s", "seconds"),
    )

    def get(self, key, now):
        """The :class:`Answer` kept for ``key`` at ``now``, or None."""
        self._expire(now)
        kept = self._answers.get(key)
        return None if kept is None else kept[1]

    def put(self, key, answer, now):
        """Keep ``answer`` for ``key`` from ``now`` on."""
        self._expire(now)
        self._answers[key] = (now, answer)
        while len(self._answers) > self.max_keys:
            self._answers.popitem(last=False)
            self.evicted += 1

    def again(self, kept, fingerprint):
        """``kept``, the :class:`Answer` to a key's first request, for a retry with that key
        (``fingerprint``: the retry's): counted among the ``replayed``; raises :class:`KeyReused`,
        counted among the ``refused``, when the retry is another request."""
        if kept.fingerprint != fingerprint:
            self.refused += 1
            raise KeyReused()
        self.replayed += 1
        return kept

    def _expire(self, now):
        answers = self._answers
        while answers:
            added, _ = next(iter(answers.values()))
            if now - added < self.seconds:
                return
            answers.popitem(last=False)
