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
* Standard library only: the broker and the load client (which must install
  without a server stack) both build their command lines with it.
"""

import dataclasses
from typing import Any, Callable, Optional, Sequence


@dataclasses.dataclass(frozen=True)
class Flag:
    """One flag: ``default`` is its value as typed (None: none); ``shown`` is
    what its help says the default is, when that is not ``default`` itself;
    a ``switch`` stores ``not inverted`` into ``dest`` when given."""

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

    def variable(self, prefix):
        """The environment variable of this flag under ``prefix`` (``BROKER_``)."""
        return prefix + self.name.lstrip("-").upper().replace("-", "_")


def is_on(text):
    return text.strip().lower() in ("1", "true", "yes", "on")


def add_flags(parser, flags, prefix, environ):
    """Add every :class:`Flag` of ``flags`` to ``parser`` (an argparse parser or
    group), its default read from ``environ`` under ``prefix``."""
    for flag in flags:
        variable = flag.variable(prefix)
        given = environ.get(variable)
        if flag.switch:
            on = is_on(given or "")
            parser.add_argument(flag.name, dest=flag.dest, action="store_false" if flag.inverted else "store_true",
                                default=not on if flag.inverted else on,
                                help="%s [%s=1]" % (flag.help, variable))
            continue
        shown = flag.shown if flag.shown is not None else ("%(default)s" if flag.default is not None else None)
        parser.add_argument(flag.name, dest=flag.dest, type=flag.type, metavar=flag.metavar, choices=flag.choices,
                            default=given if given else flag.default,
                            help="%s [%s%s]" % (flag.help, variable, ", default " + shown if shown else ""))
