"""How the ``rooms`` command spreads its viewers over its rooms: a skew, and each viewer's rooms.

Rules:

- A skew (:func:`parse`) is ``uniform`` (every room alike), ``zipf:S`` (room ``i`` from 0 weighs
  ``1 / (i + 1) ** S``, S above 0: a few busy rooms and a long tail) or ``hot:F`` (room 0 holds
  the share F of the viewers, 0 < F < 1, and the others share the rest evenly: one hot room and
  a long tail). Room 0 is the hot room: no other weighs more.
- :func:`spread` gives ``viewers`` viewers ``per_viewer`` distinct rooms each: the
  ``viewers * per_viewer`` places are shared out by the weights (largest remainders, ties to the
  lower room), no room holding more than every viewer, then dealt in turn, so the same
  arguments always give the same rooms. A room may get no viewer.
- Nothing here draws at random, reads a clock or does I/O."""

import dataclasses
import math
from typing import Optional

KINDS = ("uniform", "zipf", "hot")
HOT = 0  # the hot room's index


@dataclasses.dataclass(frozen=True)
class Skew:
    """A skew: its ``kind`` (of :data:`KINDS`) and ``value`` (zipf's exponent, the hot room's share; None
    for uniform)."""

    kind: str
    value: Optional[float] = None

    def __str__(self):
        return self.kind if self.value is None else "%s:%g" % (self.kind, self.value)

    def weights(self, rooms):
        """The weight of each of ``rooms`` rooms, room 0 first, summing to 1."""
        if self.kind == "zipf":
            raw = [1.0 / (i + 1) ** self.value for i in range(rooms)]
        elif self.kind == "hot" and rooms > 1:
            raw = [self.value] + [(1.0 - self.value) / (rooms - 1)] * (rooms - 1)
        else:
            raw = [1.0] * rooms
        total = sum(raw)
        return [weight / total for weight in raw]


def parse(text):
    """The :class:`Skew` of ``uniform``, ``zipf:S`` or ``hot:F``; ValueError saying the rule otherwise."""
    kind, colon, value = text.strip().partition(":")
    try:
        number = float(value) if colon else None
    except ValueError:
        number = math.nan
    if kind == "uniform" and not colon:
        return Skew(kind)
    if kind == "zipf" and number is not None and 0 < number < math.inf:
        return Skew(kind, number)
    if kind == "hot" and number is not None and 0 < number < 1:
        return Skew(kind, number)
    raise ValueError("a skew is uniform, zipf:S (S above 0) or hot:F (0 < F < 1), got %r" % text)


def shares(weights, total, most):
    """``total`` places shared out by ``weights``, largest remainders first (ties to the lower index),
    none above ``most``: a room whose share would be above it gets ``most`` and the others the rest."""
    counts = [0] * len(weights)
    free = list(range(len(weights)))
    left = total
    while free:
        weight = sum(weights[i] for i in free)
        full = [i for i in free if left * weights[i] / weight > most]
        if not full:
            break
        for i in full:
            counts[i] = most
            left -= most
        free = [i for i in free if i not in full]
    if not free or left <= 0:
        return counts
    weight = sum(weights[i] for i in free)
    quotas = {i: left * weights[i] / weight for i in free}
    for i in free:
        counts[i] = int(quotas[i])
    by_remainder = sorted(free, key=lambda i: (-(quotas[i] - counts[i]), i))
    for i in by_remainder[:left - sum(counts[i] for i in free)]:
        counts[i] += 1
    return counts


def spread(skew, rooms, viewers, per_viewer=1):
    """Each viewer's rooms (a tuple of ``per_viewer`` distinct room indexes), for ``viewers`` viewers over
    ``rooms`` rooms by ``skew``; ValueError if a viewer cannot have ``per_viewer`` distinct rooms."""
    if not 1 <= per_viewer <= rooms:
        raise ValueError("a viewer joins 1 to %d rooms here, not %d" % (rooms, per_viewer))
    counts = shares(skew.weights(rooms), viewers * per_viewer, viewers)
    places = [room for room, count in enumerate(counts) for _ in range(count)]
    return tuple(tuple(places[viewer + k * viewers] for k in range(per_viewer)) for viewer in range(viewers))


def audiences(spread_rooms, rooms):
    """How many viewers each of ``rooms`` rooms has, given each viewer's rooms."""
    counts = [0] * rooms
    for joined in spread_rooms:
        for room in joined:
            counts[room] += 1
    return counts

