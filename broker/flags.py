"""Command-line flags from a table, each with an environment variable as its default.

Rules this module keeps:

* A flag ``--max-buffer`` of a program whose prefix is ``BROKER_`` reads
  ``BROKER_MAX_BUFFER``: the variable sets the default, the flag overrides it.
* A flag's help ends with its variable and its default, ``[BROKER_MAX_BUFFER,
  default 1048576]``, so ``--help`` is the reference and cannot drift from it.
* Defaults are written as they would be typed, and argparse applies the
  flag's type to them: a bad value in the environment is refused like a bad
  flag, naming the flag.
* A switch takes no value; it is on when given, or when its variable is 1,
  true, yes or on.
* A secret's value (a token) never shows in ``--help``, from the environment
  or not: its help names the variable only.
* Standard library only: the broker and the load client (which must install
  without a server stack) both build their command lines with it.
"""

import dataclasses
import os
import ssl
from typing import Any, Callable, Mapping, Optional, Sequence


@dataclasses.dataclass(frozen=True)
class Flag:
    """One flag: ``default`` is its value as typed (None: none); ``shown`` is
    what its help says the default is, when that is not ``default`` itself;
    a ``switch`` stores ``not inverted`` into ``dest`` when given; a ``secret`` never shows."""

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

    def variable(self, prefix):
        """The environment variable of this flag under ``prefix`` (``BROKER_``)."""
        return variable(prefix, self.name)


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


def is_on(text):
    return text.strip().lower() in ("1", "true", "yes", "on")


@dataclasses.dataclass(frozen=True)
class Environment:
    """Where flags read their defaults: the variables of ``values`` named ``prefix`` + the flag's name."""

    prefix: str
    values: Mapping[str, str]

    def add(self, container, *names, help="", default=None, shown=None, secret=False, **kwargs):
        """Add one flag to ``container`` (an argparse parser or group) as
        ``add_argument(*names, **kwargs)`` would, by the rules above: its
        first long name gives its variable; ``default`` is as typed, or a value
        of its own kind; ``shown`` replaces it in the help, and a help that
        says its default itself keeps its own words; a ``secret`` shows no
        default at all. A ``store_true`` or ``store_false`` action is a switch."""
        name = variable(self.prefix, [name for name in names if name.startswith("--")][0])
        given = self.values.get(name)
        action = kwargs.get("action")
        if action in ("store_true", "store_false"):
            on = is_on(given or "")
            default = on if action == "store_true" else not on
            suffix = "%s=1" % name
        else:
            default = given if given else default
            if secret:
                shown = None
            elif shown is None and default is not None and "default" not in help:
                shown = "%(default)s"
            suffix = name + (", default " + shown if shown else "")
        return container.add_argument(*names, default=default, help=("%s [%s]" % (help, suffix)).lstrip(), **kwargs)

    def add_flags(self, parser, flags):
        """Add every :class:`Flag` of ``flags`` to ``parser``."""
        for flag in flags:
            kwargs = {"dest": flag.dest} if flag.dest else {}
            if flag.switch:
                kwargs["action"] = "store_false" if flag.inverted else "store_true"
            else:
                kwargs.update(type=flag.type, metavar=flag.metavar, choices=flag.choices, default=flag.default,
                              shown=flag.shown, secret=flag.secret)
            self.add(parser, flag.name, help=flag.help, **kwargs)
