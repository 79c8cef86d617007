"""The documentation's files and what their text says, for the tests that keep it true.

* The pages are README.rst, BENCHMARKS.rst and every ``docs/*.rst``; deploy/'s
  files (the systemd unit, haproxy's configuration, the dashboard, the notes on
  Redis) name variables and metrics too.
* A page's text is code or prose. Code is a literal block (the indented lines
  after a paragraph ending in ``::``, or a ``code-block`` directive), each
  logical line of it (backslash continuations joined) on its own, and each
  inline literal (````...````). Prose is the rest.
* :func:`reference` is the module that renders the reference pages
  (``docs/_ext/broker_reference.py``): the parsers and the metric catalogue
  the tests compare the pages with; :func:`closes`, the close codes of
  ``broker/protocol/close_codes.py``.
"""

import functools
import glob
import importlib.util
import os
import re
import sys
import textwrap
from typing import NamedTuple, Optional

from checkout import ROOT

PAGES = ("README.rst", "BENCHMARKS.rst")
DEPLOY = "deploy"
BLOCK_DIRECTIVE = re.compile(r"^\s*\.\. (?:code-block|code|sourcecode|parsed-literal)::")
BLOCK_OPTION = re.compile(r"^\s*:([a-z-]+):\s*(.*)$")
INLINE_LITERAL = re.compile(r"``(.+?)``", re.DOTALL)


def pages():
    """``(path relative to the checkout, text)`` of every page."""
    paths = list(PAGES) + sorted(os.path.relpath(path, ROOT) for path in glob.glob(os.path.join(ROOT, "docs", "*.rst")))
    return [(path, _read(path)) for path in paths]


def deploy_files():
    """``(path relative to the checkout, text)`` of every file of deploy/."""
    paths = sorted(os.path.relpath(path, ROOT) for path in glob.glob(os.path.join(ROOT, DEPLOY, "*")))
    return [(path, _read(path)) for path in paths if os.path.isfile(os.path.join(ROOT, path))]


def _read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def line_of(text, offset):
    return text.count("\n", 0, offset) + 1


class Block(NamedTuple):
    """One literal block: its ``:name:`` (a directive's option) or None, where its text starts
    (a line number, from 1) and ends (the line number after it), and its text, unindented."""

    name: Optional[str]
    line: int
    end: int
    text: str


def _indent(line):
    return len(line) - len(line.lstrip())


def literal_blocks(text):
    """Every literal block of the reStructuredText ``text``: the indented lines after a
    paragraph ending with ``::``, or after a ``code-block`` (``code``, ``sourcecode``,
    ``parsed-literal``) directive and its options."""
    lines = text.split("\n")
    blocks = []
    i = 0
    while i < len(lines):
        line = lines[i].rstrip()
        directive = BLOCK_DIRECTIVE.match(line)
        if not directive and not (line.endswith("::") and not line.lstrip().startswith("..")):
            i += 1
            continue
        outer, name = _indent(lines[i]), None
        i += 1
        while directive and i < len(lines) and BLOCK_OPTION.match(lines[i]):
            option = BLOCK_OPTION.match(lines[i])
            name = option.group(2).strip() if option.group(1) == "name" else name
            i += 1
        start = i
        while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > outer):
            i += 1
        end = i
        while end > start and not lines[end - 1].strip():
            end -= 1
        if any(lines[index].strip() for index in range(start, end)):
            while not lines[start].strip():
                start += 1
            blocks.append(Block(name, start + 1, end + 1, textwrap.dedent("\n".join(lines[start:end]))))
    return blocks


def block_lines(text):
    """``(line number, logical line)`` of every line of every literal block of ``text``, a line
    ending with a backslash joined to the next, spaces collapsed."""
    found = []
    for block in literal_blocks(text):
        logical, first = "", None
        for number, line in enumerate(block.text.split("\n"), block.line):
            first = number if first is None else first
            if line.rstrip().endswith("\\"):
                logical += line.rstrip()[:-1] + " "
                continue
            if (logical + line).strip():
                found.append((first, " ".join((logical + line).split())))
            logical, first = "", None
    return found


def split(text):
    """``(code, prose)``: ``code`` is ``(line number, text)`` of each logical line of a
    literal block and each inline literal; ``prose`` is ``text`` with all of them blanked."""
    lines = text.split("\n")
    for block in literal_blocks(text):
        for index in range(block.line - 1, block.end - 1):
            lines[index] = ""
    code = block_lines(text)
    prose = "\n".join(lines)
    for match in INLINE_LITERAL.finditer(prose):
        code.append((line_of(prose, match.start()), " ".join(match.group(1).split())))
    prose = INLINE_LITERAL.sub(lambda match: re.sub(r"[^\n]", " ", match.group(0)), prose)
    return sorted(code), prose


@functools.lru_cache(maxsize=None)
def reference():
    """``docs/_ext/broker_reference.py``, imported from the checkout."""
    path = os.path.join(ROOT, "docs", "_ext", "broker_reference.py")
    spec = importlib.util.spec_from_file_location("broker_reference", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def closes():
    """``{name: code}`` of every close of ``broker/protocol/close_codes.py`` (``PROTOCOL_ERROR``
    is a code alone; an int out of the close codes' range, as ``TOKEN_WAIT_S``, is no code)."""
    from broker.protocol import close_codes

    found = {}
    for name, value in vars(close_codes).items():
        if name.isupper() and isinstance(value, close_codes.Close):
            found[name] = value.code
        elif name.isupper() and isinstance(value, int) and 1000 <= value <= 4999:
            found[name] = value
    return found
