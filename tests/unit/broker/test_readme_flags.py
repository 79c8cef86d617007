"""The README's flag tables say what the broker's parser does: every flag, its
environment variable (which sets it the same way) and its default."""

import os
import re

import pytest

from broker import config
from checkout import ROOT

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


def flag_named(name):
    (flag,) = [flag for flag in config.FLAGS if flag.name == name]
    return flag


def dest_of(flag):
    return flag.dest or flag.name.lstrip("-").replace("-", "_")


def test_every_flag_is_in_the_readme_once():
    assert sorted(flag for flag, *_ in ROWS) == sorted(flag.name for flag in config.FLAGS)


def test_help_names_each_flags_variable():
    text = " ".join(config.build_parser({}).format_help().split())
    for flag in config.FLAGS:
        assert "[%s" % flag.variable("BROKER_") in text, "--help does not name %s's variable" % flag.name


@pytest.mark.parametrize("name, variable, set_to, default", ROWS, ids=[row[0] for row in ROWS])
def test_each_flag_has_its_variable_and_default(name, variable, set_to, default):
    flag = flag_named(name)
    assert flag.variable("BROKER_") == variable, "the README names another variable for %s" % name
    dest = dest_of(flag)
    if flag.switch:  # off by default, set by VARIABLE=1
        assert (default, set_to) == ("off", "=1")
        assert value(dest) != value(dest, [name]) == value(dest, environ={variable: "1"})
        return
    given = default.split(": ")[0].strip().strip("`")
    if given == "none":
        assert value(dest) is None
        return
    assert value(dest) == value(dest, [name, given]), "%s defaults to %r" % (name, value(dest))
    assert value(dest, environ={variable: given}) == value(dest, [name, given])
