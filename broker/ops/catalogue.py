"""The catalogue of a running broker's figures: its parts, each at its place in ``/stats``.

Rules this module keeps:

* Each part states its own figures (:mod:`broker.core.figures`); here they are only put in
  order: :func:`parts` lists the parts of a node and its router in the order of ``/stats``,
  each with its place there. ``GET /stats`` (:mod:`broker.ops.api`) and ``GET /metrics``
  (:mod:`broker.ops.metrics`) both render this list, and the monitoring page lists what the
  latter yields.
* A part the broker runs without (None) is left out, and so is everything it states.
* Read at request or scrape time only: the list is made anew for each, and costs a message
  nothing.
"""

import broker
from broker.core.figures import Figure
from broker.ops import pypy_environment
from broker.runtime import interpreter


class PyPyJit:
    """The JIT's parameters and who set them (:func:`broker.ops.pypy_environment.jit_stats`),
    on PyPy; left out on CPython."""

    FIGURES = (Figure("jit", lambda jit: pypy_environment.jit_stats(), optional=True),)


class Release:
    """Which broker runs, on which interpreter."""

    FIGURES = (Figure("interpreter", lambda release: interpreter()),
               Figure("version", lambda release: broker.__version__))


def parts(node, router):
    """``(place in /stats, part)`` of ``node`` (a :class:`broker.core.node.Node`) and its
    ``router`` (:class:`broker.transports.router.BrokerRouter`), in the order of ``/stats``;
    place ``""``: its figures at the top. The rooms' figures (:class:`broker.core.rooms.Rooms`) are
    the default room's, totalled over every room; a node without rooms shows its room's."""
    rooms = node.hub if node.rooms is None else node.rooms
    every = (("", rooms), ("counters", node.hub.counters), ("", router), ("", node.limits), ("gc", node.collection), ("", PyPyJit),
             ("backplane", node.backplane), ("named_rooms", node.rooms_in_redis), ("liveness", node.liveness),
             ("drain", node.drain), ("max_connection_age", node.ages),
             ("audience", node.audience), ("idempotency", node.idempotency), ("session_tokens", node.tokens),
             ("tls", node.tls), ("", Release))
    return [(place, part) for place, part in every if part is not None]
