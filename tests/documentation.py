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
  the tests compare the pages with.
"""

import functools
import glob
import importlib.util
import os
import re
import sys

from checkout import ROOT

PAGES = ("README.rst", "BENCHMARKS.rst")
DEPLOY = "deploy"
BLOCK_DIRECTIVE = re.compile(r"^\s*\.\. (?:code-block|code|sourcecode|parsed-literal)::")
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


def _indent(line):
    return len(line) - len(line.lstrip())


def _literal_blocks(lines):
    """``(first line index, last line index + 1)`` of each literal block of ``lines``."""
    i = 0
    while i < len(lines):
        line = lines[i].rstrip()
        directive = BLOCK_DIRECTIVE.match(line)
        if directive or (line.endswith("::") and not line.lstrip().startswith("..")):
            indent = _indent(lines[i])
            j = i + 1
            while j < len(lines) and (not lines[j].strip() or _indent(lines[j]) > indent):
                j += 1
            while j > i + 1 and not lines[j - 1].strip():
                j -= 1
            if j > i + 1:
                yield i + 1, j
            i = j
        else:
            i += 1


def split(text):
    """``(code, prose)``: ``code`` is ``(line number, text)`` of each logical line of a
    literal block and each inline literal; ``prose`` is ``text`` with all of them blanked."""
    lines = text.split("\n")
    code = []
    for start, end in _literal_blocks(lines):
        logical, first = "", None
        for index in range(start, end):
            line = lines[index]
            if first is None:
                first = index + 1
            if line.rstrip().endswith("\\"):
                logical += line.rstrip()[:-1] + " "
                continue
            if (logical + line).strip():
                code.append((first, " ".join((logical + line).split())))
            logical, first = "", None
            lines[index] = ""
        for index in range(start, end):
            lines[index] = ""
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
