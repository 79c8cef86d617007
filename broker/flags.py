"""Command-line flags from a table, each with an environment variable as its default.

Rules this module keeps:

* A flag ``--max-buffer`` of a program whose prefix is ``BROKER_`` reads
  ``BROKER_MAX_BUFFER``: the variable sets the default, the flag overrides it.
* A flag's help ends with its variable and its default, ``[BROKER_MAX_BUFFER,
  default 1048576]``, so ``--help`` is the reference and cannot drift from it.
* Defaults are written as they would be typed, and argparse applies the
  flag's type to them: a bad value in the environment is refused like a bad
  flag, naming the flag and then the variable the value came from.
* A refusal is one line, ``prog: error: argument --flag: why``, and exit
  status 2 (:class:`Parser`): the usage, 20 lines of it, is what ``--help``
  is for.
* A number is written in ASCII digits: ``-?D+(.D+)?``, an exponent or a
  unit where the type takes one. Python's ``int`` and ``float`` would also
  read the digits of other scripts (``٣`` as 3, ``５`` as 5), which no
  operator types on purpose.
* A variable named with the prefix that is no flag's but close to one's
  name (a misspelling, whose setting would not be in force) is refused; one
  far from every flag's is another program's (Celery reads ``BROKER_URL``),
  and left alone.
* A switch takes no value; it is on when given, or when its variable is 1,
  true, yes or on; a variable of 0, false, no, off or nothing leaves it off,
  and any other is refused (``ture`` would have left it off unsaid).
* A secret's value (a token) never shows in ``--help``, from the environment
  or not: its help names the variable only.
* A value has a range, checked before anything runs: a number is read by one
  of the few :class:`Bounded` types (:func:`seconds`, :func:`count`,
  :func:`rate`, :func:`size`), which refuses what is outside its range (nan,
  inf and negatives among it) and whose range the flag's help states; a
  value from ``choices`` is checked against them wherever it comes from (argparse
  itself checks only what is typed, never a default from the environment).
* A flag renamed keeps its former name, and the variable that name read, for
  the rest of the major version: hidden from ``--help``, each still sets the
  flag, and says once, on standard error, that it is deprecated and which
  name replaces it (``warning: --warm-up is deprecated, use
  --warm-up-sessions``); the flag's help names it. The new name's variable
  wins over the former one's.
* Standard library only: the broker and the load client (which must install
  without a server stack) both build their command lines with it.
"""

import argparse
import dataclasses
import difflib
import functools
import math
import os
import re
import ssl
import sys
from typing import Any, Callable, Mapping, NamedTuple, Optional, Sequence, Tuple

_SIZE = re.compile(r"\s*([0-9]+)\s*(|b|k|kb|kib|m|mb|mib|g|gb|gib)\s*", re.IGNORECASE | re.ASCII)
_WHOLE = re.compile(r"\s*[-+]?[0-9]+\s*", re.ASCII)
_NUMBER = re.compile(r"\s*[-+]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(e[-+]?[0-9]+)?|nan|inf|infinity)\s*",
                     re.IGNORECASE | re.ASCII)
_SIZE_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
               "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30}


def parse_size(text):
    """``65536``, ``64KiB``, ``1M``: a byte count (K, M and G are powers of 1024)."""
    match = _SIZE.fullmatch(text)
    if not match:
        raise argparse.ArgumentTypeError("not a size: %r (try 65536, 64KiB or 1MiB)" % text)
    return int(match.group(1)) * _SIZE_UNITS[match.group(2).lower()]


def _whole(text):
    if not _WHOLE.fullmatch(text):
        raise argparse.ArgumentTypeError("not a whole number: %r" % text)
    return int(text)


def _number(text):
    if not _NUMBER.fullmatch(text):
        raise argparse.ArgumentTypeError("not a number: %r" % text)
    return float(text)


def _plain(value):
    """``0.5``, ``65535``, ``1000000``: a number as it would be typed, without an exponent."""
    return "%d" % value if value == int(value) else "%s" % value


def _shown_size(value):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if value >= scale and value % scale == 0:
            return "%d %s" % (value // scale, unit)
    return "%d B" % value


@dataclasses.dataclass(frozen=True)
class Bounded:
    """A flag's type: a number ``read`` from its text, from ``least`` to
    ``most``, or 0 too when ``off`` (0 then means "never" or "no limit", as the
    flag's help says). Anything else, nan and inf included, is refused with
    the range, which ``shown`` writes a bound of, and ``unit`` ends."""

    read: Callable[[str], Any]
    least: float
    most: float
    off: bool = False
    unit: str = ""
    shown: Callable[[Any], str] = _plain

    def __call__(self, text):
        value = self.read(text)
        if (self.off and value == 0) or (math.isfinite(value) and self.least <= value <= self.most):
            return value
        raise argparse.ArgumentTypeError("must be %s, got %s" % (self.range, text.strip()))

    @property
    def range(self):
        """``0, or 0.1 to 3600 seconds``: what the type takes, in words."""
        span = "%s to %s%s" % (self.shown(self.least), self.shown(self.most), self.unit)
        return ("0, or " if self.off else "") + span


def seconds(least, most, off=False):
    """A duration in seconds, fractions allowed."""
    return Bounded(_number, least, most, off, " seconds")


def count(least, most, off=False):
    """A whole number."""
    return Bounded(_whole, least, most, off)


def rate(least, most):
    """Events a second, fractions allowed; 0 is no limit."""
    return Bounded(_number, least, most, True, " a second")


def size(least, most, off=False):
    """A byte count, with a unit or not (:func:`parse_size`)."""
    return Bounded(parse_size, least, most, off, shown=_shown_size)


def one_line(text):
    """``text`` on one line: a line break in what it quotes is written ``\\n``."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


# argparse's status for a refusal, kept: a systemd unit's RestartPreventExitStatus names it.
REFUSED = 2


class Parser(argparse.ArgumentParser):
    """An argparse parser whose refusal is one line, ``prog: error: why``, without the
    usage; which takes no abbreviation of a flag (a flag added later would change what
    one means, and argparse quotes an ambiguous one with its value); and which names a
    flag it does not know without what follows it (a token, perhaps, mistyped flag and all)."""

    def __init__(self, **kwargs):
        super().__init__(allow_abbrev=False, **kwargs)

    def parse_args(self, args=None, namespace=None):
        namespace, unknown = self.parse_known_args(args, namespace)
        if unknown:
            flags = [text.partition("=")[0] for text in unknown if text.startswith("-")]
            self.error("no such flag: %s (--help lists them)" % " ".join(flags) if flags else
                       "a value without its flag: %d of them (--help lists the flags)" % len(unknown))
        return namespace

    def error(self, message):
        self.exit(REFUSED, "%s: error: %s\n" % (self.prog, one_line(message)))


# What a former name of a flag says when it is used.
DEPRECATED = "warning: %s is deprecated, use %s (the former name works until 2.0)\n"


class _Variable(str):
    """A flag's default as the environment gave it: the text, ``name``, the variable's, and
    ``replacement``, the variable that replaces it when ``name`` is a former one's."""

    name = ""
    replacement = ""


class Former(NamedTuple):
    """A renamed flag's former names, and the variable it read then (None: one that the flag
    did not read, or that another flag reads now)."""

    names: Tuple[str, ...]
    variable: Optional[str] = None


class _Former(argparse.Action):
    """A flag's former name: it stores as the flag does, after a line on standard error
    naming the flag's name, ``replacement``."""

    def __init__(self, option_strings, dest, replacement, **kwargs):
        super().__init__(option_strings, dest, **kwargs)
        self.replacement = replacement

    def __call__(self, parser, namespace, values, option_string=None):
        sys.stderr.write(DEPRECATED % (option_string, self.replacement))
        setattr(namespace, self.dest, values)


def _naming_variable(read):
    """``read``, and a refusal of a variable's text names the variable."""

    def parse(text):
        if isinstance(text, _Variable) and text.replacement:
            sys.stderr.write(DEPRECATED % (text.name, text.replacement))
        try:
            return read(str(text))
        except (argparse.ArgumentTypeError, ValueError) as error:
            if not isinstance(text, _Variable):
                raise
            why = error if isinstance(error, argparse.ArgumentTypeError) else "invalid %s value: %r" % (
                getattr(read, "__name__", "a"), str(text))
            raise argparse.ArgumentTypeError("%s (from %s)" % (why, text.name)) from None

    parse.__name__ = getattr(read, "__name__", "value")
    return parse


def _chosen(read, choices):
    """``read``, and then the value must be one of ``choices``."""

    def parse(text):
        value = read(text)
        if value not in choices:
            raise argparse.ArgumentTypeError("invalid choice: %r (choose from %s)" % (
                value, ", ".join(map(str, choices))))
        return value

    parse.__name__ = getattr(read, "__name__", "value")
    return parse


@dataclasses.dataclass(frozen=True)
class Flag:
    """One flag: ``default`` is its value as typed (None: none); ``shown`` is
    what its help says the default is, when that is not ``default`` itself;
    a ``switch`` stores ``not inverted`` into ``dest`` when given; a ``secret``
    never shows; ``formerly`` is the name it had before, deprecated. A
    :class:`Bounded` type's range ends the help."""

    name: str
    help: str
    default: Optional[str] = None
    type: Callable[[str], Any] = str
    metavar: Optional[str] = None
    choices: Optional[Sequence[str]] = None
    shown: Optional[str] = None
    switch: bool = False
    inverted: bool = False
    dest: Optional[str] = None
    secret: bool = False
    formerly: Optional[str] = None

    def variable(self, prefix):
        """The environment variable of this flag under ``prefix`` (``BROKER_``)."""
        return variable(prefix, self.name)

    @property
    def full_help(self):
        """The help, ending with the type's range if it has one."""
        if not isinstance(self.type, Bounded):
            return self.help
        return "%s; range: %s" % (self.help.rstrip("."), self.type.range)


def variable(prefix, name):
    """``BROKER_MAX_BUFFER``: the variable of ``--max-buffer`` under ``BROKER_``."""
    return prefix + name.lstrip("-").upper().replace("-", "_")


def file_error(error):
    """What went wrong with a file a flag names (an ``OSError``), in words: as the
    TLS library says it for an ``ssl.SSLError``, as the system does otherwise
    (PyPy's own text for a missing file is only "Error")."""
    if isinstance(error, ssl.SSLError) or not error.errno:
        return str(error)
    return os.strerror(error.errno)


# What a switch's variable may say.
ON = ("1", "true", "yes", "on")
OFF = ("", "0", "false", "no", "off")


def is_on(text):
    return text.strip().lower() in ON


@dataclasses.dataclass(frozen=True)
class Environment:
    """Where flags read their defaults: the variables of ``values`` named ``prefix`` + the flag's name."""

    prefix: str
    values: Mapping[str, str]

    def add(self, container, *names, help="", default=None, shown=None, secret=False, formerly=Former(()),
            **kwargs):
        """Add one flag to ``container`` (an argparse parser or group) as
        ``add_argument(*names, **kwargs)`` would, by the rules above: its
        first long name gives its variable; ``default`` is as typed, or a value
        of its own kind; ``shown`` replaces it in the help, and a help that
        says its default itself keeps its own words; a ``secret`` shows no
        default at all. A ``store_true`` or ``store_false`` action is a switch.
        A flag that takes a value may have had other names and read another
        variable, ``formerly`` (:class:`Former`; the rules' deprecation)."""
        name = variable(self.prefix, [name for name in names if name.startswith("--")][0])
        given, read_from, replacement = self.values.get(name), name, ""
        if given is None and formerly.variable and self.values.get(formerly.variable):
            given, read_from, replacement = self.values[formerly.variable], formerly.variable, name
        if formerly.names:
            help = "%s (formerly %s: deprecated)" % (help, ", ".join(formerly.names))
        action = kwargs.get("action")
        if kwargs.get("choices") is not None:
            kwargs["type"] = _chosen(kwargs.get("type", str), kwargs["choices"])
        if action in ("store_true", "store_false"):
            on = is_on(given or "")
            default = on if action == "store_true" else not on
            suffix = "%s=1" % name
        else:
            if given:
                default = _Variable(given)
                default.name, default.replacement = read_from, replacement
            kwargs["type"] = _naming_variable(kwargs.get("type") or str)
            if secret:
                shown = None
            elif shown is None and default is not None and "default" not in help:
                shown = "%(default)s"
            suffix = name + (", default " + shown if shown else "")
        added = container.add_argument(*names, default=default, help=("%s [%s]" % (help, suffix)).lstrip(), **kwargs)
        if formerly.names:
            container.add_argument(*formerly.names, dest=added.dest, type=added.type, metavar=added.metavar,
                                   default=argparse.SUPPRESS, help=argparse.SUPPRESS,
                                   action=functools.partial(_Former, replacement=names[0]))
        return added

    def misread(self, flags):
        """What is wrong with the first variable named ``prefix`` + anything that ``flags``
        would misread, or None: one that no flag reads but is close to a flag's (misspelt,
        its setting not in force), or a switch's that says neither on nor off."""
        known = {flag.variable(self.prefix): flag for flag in flags}
        current = list(known)
        known.update((variable(self.prefix, flag.formerly), flag) for flag in flags if flag.formerly)
        for name in sorted(self.values):
            if not name.startswith(self.prefix):
                continue
            flag = known.get(name)
            if flag is None:
                close = difflib.get_close_matches(name, current, 1, 0.85)
                if close:
                    return "%s is no variable of this program; did you mean %s?" % (name, close[0])
                continue
            if flag.switch and self.values[name].strip().lower() not in ON + OFF:
                return "%s is a switch: on is %s; off is %s or nothing" % (name, ", ".join(ON), ", ".join(OFF[1:]))
        return None

    def add_flags(self, parser, flags):
        """Add every :class:`Flag` of ``flags`` to ``parser``."""
        for flag in flags:
            kwargs = {"dest": flag.dest} if flag.dest else {}
            if flag.switch:
                kwargs["action"] = "store_false" if flag.inverted else "store_true"
            else:
                kwargs.update(type=flag.type, metavar=flag.metavar, choices=flag.choices, default=flag.default,
                              shown=flag.shown, secret=flag.secret)
            if flag.formerly:
                kwargs["formerly"] = Former((flag.formerly,), variable(self.prefix, flag.formerly))
            self.add(parser, flag.name, help=flag.full_help, **kwargs)
