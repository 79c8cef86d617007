"""Counters that conflate: in a client's queue, one message per key.

A message published with a key (``POST /publish?key=total``) stands for the
latest value of that key: a client that has not been sent the previous one
yet needs only the new one. Rules this module keeps, for every queue of
unsent items a client has (a socket's backlog, a polling session's queue):

* A keyed item replaces the item queued earlier under the same key, which
  leaves its place; the new one goes at the end, so what the client receives
  is still in publish order (with the replaced values left out).
* Only whole items are replaced: one partly written is a new object (a
  slice), not the item remembered, and stays.
* Unkeyed items never move nor leave. Keyed items are held to twice a
  client's buffer bound (:func:`bound`), not to the bound itself: a counter
  holds one item per key and stays far below it, while a publisher of
  endless distinct keys cannot grow a stuck client's queue without end.
* What remembers the item of each key is bounded by the queue's items, not
  by the keys ever sent: a queue written from its head (a socket's backlog)
  loses items without telling, and once the keys remembered are more than
  twice the items queued (and FORGET_SLACK), those whose item has left are
  forgotten, in one pass that looks at fewer than three entries per key it
  forgets: a constant cost per item queued, whatever the number of keys.
* The room sends a keyed message in a batch of its own (:func:`batches`),
  written with its key, so that a client's queue can replace it; of two
  with one key in one flush only the later goes out, and the messages around
  it keep their batches and their order.
* In the room a key is a :class:`ConflatingKey`, which knows whether its
  messages are a counter's; a client's queue, the history and a cluster's
  stream entry hold its text only.
"""

from typing import NamedTuple, Optional

QUERY = "key"
MAX_KEY_LENGTH = 64
# Keys remembered beyond twice the items queued before those of items gone are forgotten.
FORGET_SLACK = 16


class ConflatingKey(NamedTuple):
    """A message's conflating key in the room: its ``text``, what a client's queue, the history
    and a cluster's stream entry hold, and ``counter``, the name of the counter whose totals its
    messages carry (:mod:`broker.core.counters`), or None for a backend's or a client's key."""

    text: str
    counter: Optional[str] = None


def bound(max_buffer, key):
    """The unsent bytes beyond which a client cannot take an item of ``key`` (None: unkeyed)."""
    return max_buffer if key is None else 2 * max_buffer


def valid_key(key):
    """True for a conflating key: 1 to MAX_KEY_LENGTH printable ASCII characters, no space."""
    return 0 < len(key) <= MAX_KEY_LENGTH and key.isascii() and key.isprintable() and " " not in key


def replace_queued(queue, latest, key, item):
    """Append ``item`` to ``queue`` (a list), queued under ``key``, removing the
    item ``latest`` (a dict) remembers for ``key`` if it is still queued;
    returns the removed item, or None."""
    previous = latest.get(key)
    latest[key] = item
    queue.append(item)
    if len(latest) > 2 * len(queue) + FORGET_SLACK:
        _forget_gone(queue, latest)
    if previous is None:
        return None
    for index in range(len(queue) - 2, -1, -1):
        if queue[index] is previous:
            del queue[index]
            return previous
    return None


def _forget_gone(queue, latest):
    """Forget the keys ``latest`` remembers whose item is no longer in ``queue``."""
    queued = {id(item) for item in queue}
    for key in [key for key, item in latest.items() if id(item) not in queued]:
        del latest[key]


def batches(messages, keys):
    """The batches ``messages`` (a :class:`broker.protocol.batch.Batch`) goes out in, some of
    its messages of a conflating key (``keys``: each one's, or None): each run of messages
    without one as one batch, each keyed one alone (its batch's ``key`` set), and of two with
    one key only the later."""
    last_of = {key: index for index, key in enumerate(keys) if key is not None}
    run = []
    for index, key in enumerate(keys):
        if key is None:
            run.append(index)
        elif last_of[key] == index:
            if run:
                yield messages.picked(run)
                run = []
            alone = messages.picked((index,))
            alone.key = key
            yield alone
    if run:
        yield messages.picked(run)
