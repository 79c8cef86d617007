"""The README, the benchmark report and every page of the docs hold only commands that run
today, and name only sections the report has.

Every ``python -m loadtest ...``, ``python -m plots ...`` and ``python -m broker ...`` written in
a literal block of README.rst or docs/*.rst (or an inline literal of BENCHMARKS.rst or
docs/sizing.rst) is split as the shell would split it (``$!``, other shell variables and
``$(...)`` read as 1) and handed to that command's own parser, without running it: a flag renamed or removed fails here, naming the document, its line
and the command, and so does a deprecated name, which still parses. Every section of the report that the code, the tests or the sizing guide name
(the file or ``:doc:`benchmarks```, a comma, the title in double quotes) must begin one of the
report's section titles.
"""

import os
import re
import shlex

import pytest

import documentation
from broker import config
from checkout import ROOT
from loadtest import command_line
from plots import __main__ as plots_command_line

# The report and the sizing guide, whose inline literals are commands too; the other pages
# name commands inline (``python -m plots``) and give them in literal blocks.
REPORTS = ("BENCHMARKS.rst", os.path.join("docs", "sizing.rst"))
DOCUMENTS = REPORTS + tuple(path for path in ["README.rst"] + [
    os.path.join("docs", name) for name in sorted(os.listdir(os.path.join(ROOT, "docs"))) if name.endswith(".rst")]
    if path not in REPORTS)
COMMAND = re.compile(r"python -m (loadtest|plots|broker)(?=\s|$)")
INLINE = re.compile(r"``(.*?)``", re.S)
SHELL_VARIABLE = re.compile(r"\$\([^)]*\)|\$(!|\w+)")
SHELL_OPERATORS = {"&", "&&", ";", "|", "||"}
CITED = re.compile(r'(?:BENCHMARKS\.rst|:doc:`benchmarks`),\s+"([^"]+)"')
CITING = ("broker", "loadtest", "plots", "tests", "docs")


def read(relative):
    with open(os.path.join(ROOT, relative)) as f:
        return f.read()


def commands_in(relative):
    """``(where, command)`` of each command the document writes, from ``python -m`` on."""
    text = read(relative)
    found = []
    for number, line in documentation.block_lines(text):
        match = COMMAND.search(line)
        if match:
            found.append(("%s:%d" % (relative, number), line[match.start():]))
    for match in INLINE.finditer(text) if relative in REPORTS else ():
        literal = " ".join(match.group(1).split())
        command = COMMAND.search(literal)
        if command:
            number = text.count("\n", 0, match.start()) + 1
            found.append(("%s:%d" % (relative, number), literal[command.start():]))
    return found


def argv_of(command):
    """The command's arguments after ``python -m NAME``, up to the first shell operator."""
    words = shlex.split(SHELL_VARIABLE.sub("1", command), comments=True)
    for end, word in enumerate(words):
        if word in SHELL_OPERATORS:
            words = words[:end]
            break
    return words[2], words[3:]


def parse(module, argv):
    if module == "loadtest":
        if argv[:1] not in ([name] for name in command_line.COMMANDS):
            argv = [command_line.DEFAULT] + argv  # as command_line.main does
        return command_line.build_parser().parse_args(argv)
    if module == "plots":
        return plots_command_line.build_parser().parse_args(argv)
    return config.build_parser({}).parse_args(argv)


COMMANDS = [found for document in DOCUMENTS for found in commands_in(document)]


@pytest.fixture(autouse=True)
def no_environment_defaults(monkeypatch):
    """A LOADTEST_* or BROKER_* variable of the shell running the tests must not stand in for a flag."""
    for name in list(os.environ):
        if name.startswith(("LOADTEST_", "BROKER_")):
            monkeypatch.delenv(name)


def test_both_documents_hold_commands_of_every_kind():
    where = {(where.split(":")[0], argv_of(command)[0]) for where, command in COMMANDS}
    assert {("BENCHMARKS.rst", "loadtest"), ("BENCHMARKS.rst", "plots"), ("BENCHMARKS.rst", "broker")} <= where
    assert len([w for w, _ in COMMANDS if w.startswith("BENCHMARKS.rst")]) >= 20


@pytest.mark.parametrize("where, command", COMMANDS, ids=[where for where, _ in COMMANDS])
def test_each_command_parses_with_todays_parser(where, command, capsys):
    module, argv = argv_of(command)
    try:
        parse(module, argv)
        error = None
    except SystemExit:  # argparse has printed why
        error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error is None, "%s: %r does not parse: %s" % (where, command, error)
    deprecated = [line for line in capsys.readouterr().err.splitlines() if "is deprecated" in line]
    assert not deprecated, "%s: %r uses a deprecated name: %s" % (where, command, deprecated)


def section_titles(text):
    lines = text.split("\n")
    return [title.strip() for title, under in zip(lines, lines[1:])
            if title.strip() and re.fullmatch(r"([-=~^])\1*", under) and len(under) >= len(title.strip())]


def citations():
    """``(where, title)`` of each report section that a file of the repository names."""
    found = []
    for top in CITING:
        for directory, subdirectories, files in os.walk(os.path.join(ROOT, top)):
            subdirectories[:] = [d for d in subdirectories if d not in ("__pycache__", "node", "reference")]
            for name in files:
                if not name.endswith((".py", ".rst")):
                    continue
                path = os.path.join(directory, name)
                with open(path) as f:
                    text = f.read()
                for match in CITED.finditer(text):
                    where = "%s:%d" % (os.path.relpath(path, ROOT), text.count("\n", 0, match.start()) + 1)
                    found.append((where, " ".join(match.group(1).split())))
    return found


def test_every_section_cited_is_in_the_report():
    titles = section_titles(read("BENCHMARKS.rst"))
    cited = citations()
    assert cited, "no citation of the report found: the pattern no longer matches"
    missing = ["%s: %r" % (where, title) for where, title in cited
               if not any(heading.startswith(title) for heading in titles)]
    assert not missing, "sections named but not in BENCHMARKS.rst (%s): %s" % ("; ".join(titles), missing)
