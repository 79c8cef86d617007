"""The README's flag tables say what the broker's parser does: every flag, its
environment variable (which sets it the same way) and its default."""

import os
import re

import pytest

from broker import config
from deployment import ROOT

ROW = re.compile(r"^``(--[a-z-]+)(?: [A-Z]+)?``\s+``([A-Z_]+)(=1)?``\s+(.*)$")


def readme_rows():
    """``(flag, variable, set_to, default text)`` of each row of the README's flag tables."""
    with open(os.path.join(ROOT, "README.rst")) as f:
        rows = [ROW.match(line.rstrip()) for line in f]
    return [(m.group(1), m.group(2), m.group(3), re.search(r"\(([^()]*)\)$", m.group(4)).group(1))
            for m in rows if m]


ROWS = readme_rows()


def value(dest, argv=(), environ=None):
    return getattr(config.build_parser(environ or {}).parse_args(list(argv)), dest)


def action_of(flag):
    (action,) = [a for a in config.build_parser({})._actions if flag in a.option_strings]
    return action


def test_every_flag_is_in_the_readme_once():
    flags = {option for action in config.build_parser({})._actions for option in action.option_strings
             if action.dest not in ("help", "version")}
    assert sorted(flag for flag, *_ in ROWS) == sorted(flags)


@pytest.mark.parametrize("flag, variable, set_to, default", ROWS, ids=[row[0] for row in ROWS])
def test_each_flag_has_its_variable_and_default(flag, variable, set_to, default):
    action = action_of(flag)
    assert "[%s" % variable in action.help, "--help names another variable for %s" % flag
    if action.nargs == 0:  # a switch: off by default, set by VARIABLE=1
        assert (default, set_to) == ("off", "=1")
        assert value(action.dest) != value(action.dest, [flag]) == value(action.dest, environ={variable: "1"})
        return
    given = default.split(":")[0].strip().strip("`")
    if given == "none":
        assert value(action.dest) is None
        return
    assert value(action.dest) == value(action.dest, [flag, given]), "%s defaults to %r" % (flag, value(action.dest))
    assert value(action.dest, environ={variable: given}) == value(action.dest, [flag, given])
