"""Sessions and their tokens: who waits for a first token, whose token expires when, and the counts.

A session whose ``?rooms=`` names a private room (``--private-rooms``, :class:`broker.core.node.ClientRules`)
joins nothing until its first message, its token (:mod:`broker.protocol.tokens`), which
:mod:`broker.transports.subscriber` checks. Rules this module keeps:

* A session waiting for its first token is due :data:`broker.protocol.close_codes.TOKEN_WAIT_S`
  after it opened, on the monotonic clock; one holding a private room is due at its token's
  ``exp``, on the epoch's clock (a refresh moves it). Both wait in buckets of a second
  (:class:`broker.core.deadlines.Deadlines`); :meth:`SessionTokens.due`, once a second, finds
  those due with the close each gets (``TOKEN_REQUIRED``, ``TOKEN_EXPIRED``). A public session's
  token is never due: it holds nothing a token gives.
* A session is forgotten as it closes (:meth:`SessionTokens.forget`), whatever it waited for.
  One waiting for its first token is in no room: the broker's drain closes those as it ends
  (:meth:`SessionTokens.waiting`).
* Counted, since the broker started: tokens accepted (a session's first, that joined it, or a
  public session's first), refreshed (a later one on the same session), the sessions closed
  for their token as they joined or refreshed (by reason: ``required``, no token;
  ``refused``, a bad one; ``expired``, one already past its ``exp``), those closed as their
  token expired, and the messages pages sent in a private room their token does not let them
  publish in, dropped. Never a label per room or per subject.
* Nothing here reads a clock or does I/O: the caller gives the times.
"""

from broker.core import figures
from broker.core.deadlines import Deadlines
from broker.core.figures import COUNTER, Figure, Metric
from broker.protocol.close_codes import TOKEN_EXPIRED, TOKEN_REFUSED, TOKEN_REQUIRED, TOKEN_WAIT_S

# Each close for a token as a session joins or refreshes, by the reason it is counted under.
REFUSALS = {TOKEN_REQUIRED: "required", TOKEN_REFUSED: "refused", TOKEN_EXPIRED: "expired"}


class SessionTokens:
    """The sessions waiting for their first token, those holding private rooms until their
    token's ``exp``, and the counts of what their tokens did (see the module's rules)."""

    def __init__(self):
        self._awaited = Deadlines()
        self._expiring = Deadlines()
        self.accepted = 0
        self.refreshed = 0
        self.refused = dict.fromkeys(REFUSALS.values(), 0)
        self.expired = 0
        self.sends_dropped = 0

    def wait(self, session, now):
        """``session``, opened at ``now`` (monotonic), waits for its first token."""
        self._awaited.add(session, now + TOKEN_WAIT_S)

    def hold(self, session, expires):
        """``session`` holds a private room until ``expires`` (its token's ``exp``, epoch
        seconds), instead of until it was, or of waiting."""
        self._awaited.discard(session)
        self._expiring.add(session, expires)

    def forget(self, session):
        """``session`` closed; one never seen is ignored."""
        self._awaited.discard(session)
        self._expiring.discard(session)

    def waiting(self):
        """The sessions waiting for their first token now (they hold no room)."""
        return list(self._awaited)

    def refuse(self, close):
        """Count a session closed with ``close`` (a key of :data:`REFUSALS`) as it sent its token, or none."""
        self.refused[REFUSALS[close]] += 1

    def due(self, now, wall):
        """``(session, close)`` for each session due at ``now`` (monotonic) or ``wall`` (epoch
        seconds): ``TOKEN_REQUIRED`` for a first token awaited too long, ``TOKEN_EXPIRED`` for a
        token past its ``exp``; each returned once, counted, and forgotten."""
        unwaited = self._awaited.due(now)
        expired = self._expiring.due(wall)
        self.refused[REFUSALS[TOKEN_REQUIRED]] += len(unwaited)
        self.expired += len(expired)
        return [(session, TOKEN_REQUIRED) for session in unwaited] + [(session, TOKEN_EXPIRED) for session in expired]

    def stats(self):
        return figures.stats_of(self)

    FIGURES = (
        Figure("waiting", lambda tokens: len(tokens._awaited)),
        Figure("holding", lambda tokens: len(tokens._expiring)),
        Figure("accepted", "accepted", Metric("session_tokens_accepted", COUNTER, "Tokens (JWT) sessions sent "
                                              "first that were accepted: a join of --private-rooms, or a public "
                                              "session's token")),
        Figure("refreshed", "refreshed", Metric("session_tokens_refreshed", COUNTER, "Tokens (JWT) sessions sent "
                                                "again, accepted: the session keeps its rooms until the new exp")),
        Figure("refused", "refused", Metric("session_tokens_refused", COUNTER, "Sessions closed for their token as "
                                            "they joined or refreshed: none sent (3015), a bad one (3016), one "
                                            "already expired (3017)", ("reason",))),
        Figure("expired", "expired", Metric("session_tokens_expired", COUNTER, "Sessions in --private-rooms closed "
                                            "as their token expired, no fresh one sent in time (3017)")),
        Figure("private_sends_dropped", "sends_dropped",
               Metric("private_sends_dropped", COUNTER, "Messages pages sent in a private room their token does not "
                      "let them publish in, dropped")),
    )
