"""What the reference pages say, read from the code rather than written by hand.

* The broker's flags come from its own parser, built with an empty
  environment: each flag's help ends with its variable and its default as
  ``--help`` prints them (``[BROKER_MAX_BUFFER, default 1048576]``, a switch's
  ``[BROKER_NO_CLIENT_PUBLISH=1]``, a secret's ``[BROKER_PUBLISH_TOKEN]``), and
  :func:`options` splits that back into columns. The load client's parser is
  built with no ``LOADTEST_`` variable set, for the same reason.
* The broker's metrics come from its collector
  (:class:`broker.ops.metrics.BrokerCollector`, which renders the figures each
  part states, :mod:`broker.core.figures`), built over the parts a running
  broker has (:func:`broker.app.run` builds the same ones), in each mode in
  which the broker runs: :data:`MODES`. A metric appears in the modes whose
  parts yield it; no socket is opened, and the parts' timers die with an
  event loop of their own, whatever loop the caller had or closed.

Plain Python, without Sphinx: the documentation's extension
(``broker_docs``) renders these, and the tests of the documentation read them.
"""

import argparse
import asyncio
import contextlib
import dataclasses
import os
import re
from typing import Callable, FrozenSet, Optional, Tuple

HELP_SUFFIX = re.compile(r"^(?P<meaning>.*?)\s*\[(?P<variable>[A-Z][A-Z0-9_]*)(?P<switch>=1)?"
                         r"(?:, default (?P<default>.*))?\]$", re.DOTALL)
NO_DEFAULT = "none"
SWITCH_DEFAULT = "off"


@dataclasses.dataclass(frozen=True)
class Option:
    """One option as its parser's ``--help`` describes it: ``default`` is the
    text ``--help`` gives (``off`` for a switch, ``none`` without one),
    ``variable`` the environment variable that sets it (None for an option
    that reads none), ``group`` the parser's group it is listed under."""

    names: Tuple[str, ...]
    metavar: Optional[str]
    variable: Optional[str]
    switch: bool
    default: str
    meaning: str
    group: str
    dest: str


@contextlib.contextmanager
def environment_without(prefix):
    """``os.environ`` without the variables named ``prefix``..., restored after."""
    removed = {name: value for name, value in os.environ.items() if name.startswith(prefix)}
    for name in removed:
        del os.environ[name]
    try:
        yield
    finally:
        os.environ.update(removed)


def broker_parser():
    """``python -m broker``'s parser, as it is with no ``BROKER_`` variable set."""
    from broker import config

    return config.build_parser({})


def loadtest_parser():
    """``python -m loadtest``'s parser (its commands included), as it is with no ``LOADTEST_`` variable set."""
    from loadtest import command_line

    with environment_without("LOADTEST_"):
        return command_line.build_parser()


def subparsers(parser):
    """``(command, parser)`` of ``parser``'s commands, depth first; ``parser`` itself first, as ``""``."""
    yield "", parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, command in action.choices.items():
                for path, found in subparsers(command):
                    yield (name + " " + path).strip(), found


def _metavar(action):
    if action.nargs == 0:
        return None
    if action.metavar is not None:
        return action.metavar
    if action.choices is not None:
        return "{%s}" % ",".join(str(choice) for choice in action.choices)
    return action.dest.upper()


def options(parser):
    """Every :class:`Option` of ``parser`` (but ``--help`` and ``--version``), by group, as ``--help`` lists them."""
    formatter = parser._get_formatter()
    found = []
    for group in parser._action_groups:
        for action in group._group_actions:
            if not action.option_strings or action.help == argparse.SUPPRESS:
                continue
            if isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
                continue
            meaning = formatter._expand_help(action) if action.help else ""
            match = HELP_SUFFIX.match(meaning)
            switch = action.nargs == 0
            variable = None
            if match:
                meaning, variable = match.group("meaning"), match.group("variable")
                shown = match.group("default")
                switch = switch or bool(match.group("switch"))
            else:
                shown = None if action.default in (None, argparse.SUPPRESS) else str(action.default)
            default = SWITCH_DEFAULT if switch else (shown if shown is not None else NO_DEFAULT)
            found.append(Option(tuple(action.option_strings), _metavar(action), variable, switch, default,
                                " ".join(meaning.split()), group.title, action.dest))
    return found


@dataclasses.dataclass(frozen=True)
class Mode:
    """A way the broker runs: ``label`` says when, ``gone`` says when a metric of
    the plain broker is missing in this mode (None: it never is), and
    ``parts(config)`` builds the node and router of a broker in this mode."""

    key: str
    label: str
    parts: Callable
    gone: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class Metric:
    """One metric family: ``name`` as the collector names it, ``samples`` the
    names a scrape shows (a counter's ``_total``, a histogram's ``_bucket``,
    ``_sum``, ``_count``), ``labels`` its label names, each with the values it
    always has (empty when they vary), ``modes`` the keys of the :data:`MODES`
    it appears in, ``when`` those in words."""

    name: str
    type: str
    help: str
    samples: Tuple[str, ...]
    labels: Tuple[Tuple[str, Tuple[str, ...]], ...]
    modes: FrozenSet[str]
    when: str


def _broker_parts(config, collection=None, backplane=None):
    """A node and router as :func:`broker.app.run` builds them for ``config``, without a socket."""
    from broker import app
    from broker.core.hub import Hub, Keeping

    keeping = Keeping(config.replay, config.history, config.history_seconds, config.max_buffer)
    hub = Hub(lambda callback: None, keeping)
    node = app.make_node(config, hub, app.connection_limits(config, 1024), backplane, collection)
    return node, app.make_router(config, node)


def _cpython(config):
    from broker.ops.gc_policy import FreezePolicy

    # The counters CPython's collector policy reports (its CpythonFreezer's), without
    # touching this interpreter's collector, whichever it is.
    return _broker_parts(config, collection=FreezePolicy())


def _pypy(config, minor=False, major=False):
    from broker.ops.gc_policy import MajorCollectionTrigger

    trigger = MajorCollectionTrigger()
    if minor or major:
        trigger.after_minor(64 << 20)
    if major:
        trigger.after_major(32 << 20)
    return _broker_parts(config, collection=trigger)


def _age(config):
    return _broker_parts(dataclasses.replace(config, max_connection_age=3600.0))


def _redis(config, running=False):
    from broker import app

    config = dataclasses.replace(config, redis="redis://127.0.0.1:6379/0")
    backplane = app.cluster_backplane(config)
    if running:
        # A message came back from the stream, and the brokers' count came back from Redis.
        backplane.state.came_up()
        backplane.state.read_through("1700000000000-0", "1700000000000-0", 1)
        backplane.room_audience = 0
    return _broker_parts(config, backplane=backplane)


MODES = (
    Mode("broker", "always", _broker_parts),
    Mode("cpython", "on CPython", _cpython),
    Mode("pypy", "on PyPy", _pypy),
    Mode("pypy-minor", "on PyPy, after its first minor collection", lambda config: _pypy(config, minor=True)),
    Mode("pypy-major", "on PyPy, after its first major collection", lambda config: _pypy(config, major=True)),
    Mode("max-connection-age", "with --max-connection-age", _age),
    Mode("redis", "with --redis", _redis, gone="with --redis, once the brokers' count is known"),
    Mode("redis-running", "with --redis, once a message came back from the stream",
         lambda config: _redis(config, running=True)),
)


class _NurseryOnPyPy:
    """:mod:`broker.ops.pypy_environment` as it answers on PyPy, for the PyPy modes on another interpreter."""

    @staticmethod
    def stats():
        return {"bytes": 4 << 20, "set_by": "broker"}


def _sample_names(name, kind):
    if kind == "counter":
        return (name + "_total",)
    if kind == "histogram":
        return tuple(name + suffix for suffix in ("_bucket", "_sum", "_count"))
    return (name,)


def _labels(family):
    names = list(getattr(family, "_labelnames", ()))
    for sample in family.samples:
        names += [label for label in sample.labels if label not in names and label != "le"]
    values = {}
    for name in names:
        seen = [sample.labels[name] for sample in family.samples if name in sample.labels]
        # Values a family always lists (even at 0) are its fixed set; one value is only the current one.
        values[name] = tuple(dict.fromkeys(seen)) if len(seen) > 1 else ()
    return tuple((name, values[name]) for name in names)


async def _families(config):
    """The collector's families by name, and the modes each appears in."""
    from broker.ops import gc_policy, metrics

    families, modes = {}, {}
    for mode in MODES:
        node, router = mode.parts(config)
        saved = gc_policy.pypy_environment
        if mode.key.startswith("pypy"):
            gc_policy.pypy_environment = _NurseryOnPyPy
        try:
            for family in metrics.BrokerCollector(node, router).collect():
                families.setdefault(family.name, family)
                modes.setdefault(family.name, []).append(mode.key)
        finally:
            gc_policy.pypy_environment = saved
    return families, modes


def metric_catalogue():
    """Every :class:`Metric` the broker's collector yields, in the order it yields them, with the
    modes it appears in."""
    from broker import config as broker_config

    families, modes = asyncio.run(_families(broker_config.parse_args([], {})))
    found = []
    for name, family in families.items():
        present = modes[name]
        first = next(mode for mode in MODES if mode.key in present)
        when = first.label
        missing = [mode.gone for mode in MODES if mode.gone and mode.key not in present]
        if first.key == "broker" and missing:
            when += " (%s)" % "; ".join(missing)
        found.append(Metric(name, family.type, family.documentation, _sample_names(name, family.type),
                            _labels(family), frozenset(present), when))
    return found


def process_metrics():
    """The process's and the interpreter's metrics (prometheus-client's own collectors) of this machine."""
    from prometheus_client import PlatformCollector, ProcessCollector

    found = []
    for collector in (ProcessCollector(registry=None), PlatformCollector(registry=None)):
        for family in collector.collect():
            found.append(Metric(family.name, family.type, family.documentation,
                                _sample_names(family.name, family.type), _labels(family), frozenset(["broker"]),
                                "always"))
    return found
