"""The "Log lines" section of docs/monitoring.rst quotes the broker's log lines as its source
writes them: ``LEVEL logger: format``, each an inline literal of the section.

* Every line quoted is a logging call of ``broker/`` (read with :mod:`ast`): that format, at that
  level (``exception`` is ERROR; a ``log(level, ...)`` call may be at any level), on the logger
  of that name (the module's ``LOG = logging.getLogger(NAME)``, or ``logging.getLogger(NAME)``
  at the call).
* Every call at INFO or above is quoted, so that a line added to the broker is added to the page.
  DEBUG lines are described, not each quoted.
"""

import ast
import glob
import os
import re

import documentation
from checkout import ROOT

MONITORING = os.path.join("docs", "monitoring.rst")
SECTION_TITLE = "Log lines"
LEVELS = {"debug": "DEBUG", "info": "INFO", "warning": "WARNING", "error": "ERROR", "exception": "ERROR",
          "critical": "CRITICAL"}
QUOTED = re.compile(r"^(DEBUG|INFO|WARNING|ERROR|CRITICAL) ([a-z_.]+): (.+)$")
# The level of a ``log(level, ...)`` call: any.
ANY_LEVEL = None


def _logger_name(node, module_logger):
    """The logger a call's receiver names: ``LOG`` (the module's), or ``logging.getLogger("name")``."""
    if isinstance(node, ast.Name) and node.id == "LOG":
        return module_logger
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "getLogger"
            and node.args and isinstance(node.args[0], ast.Constant)):
        return node.args[0].value
    return None


def logging_calls():
    """``{(level, logger, format)}`` of every logging call of the broker whose format is a string
    literal; ``level`` is :data:`ANY_LEVEL` for a ``log(level, ...)`` call."""
    found = set()
    for path in glob.glob(os.path.join(ROOT, "broker", "**", "*.py"), recursive=True):
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        module_logger = None
        for node in tree.body:
            if (isinstance(node, ast.Assign) and [getattr(target, "id", None) for target in node.targets] == ["LOG"]):
                module_logger = _logger_name(node.value, None)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            method, logger = node.func.attr, _logger_name(node.func.value, module_logger)
            if logger is None or (method not in LEVELS and method != "log"):
                continue
            message = node.args[1 if method == "log" else 0]
            if isinstance(message, ast.Constant) and isinstance(message.value, str):
                found.add((LEVELS.get(method, ANY_LEVEL), logger, message.value))
    return found


def section(text, title):
    """The lines of ``text`` from the heading ``title`` (underlined with ``-``) to the next such heading."""
    lines = text.split("\n")

    def heading(i):
        return lines[i].strip() and i + 1 < len(lines) and lines[i + 1] == "-" * len(lines[i])

    start = next(i for i in range(len(lines)) if lines[i] == title and heading(i))
    end = next((i for i in range(start + 2, len(lines)) if heading(i)), len(lines))
    return "\n".join(lines[start:end])


def quoted_lines():
    """``{(level, logger, format)}`` of every line the section quotes."""
    with open(os.path.join(ROOT, MONITORING), encoding="utf-8") as f:
        code, _ = documentation.split(section(f.read(), SECTION_TITLE))
    return {match.groups() for _, literal in code for match in [QUOTED.match(literal)] if match}


def logs(call, line):
    """Whether the logging ``call`` writes the quoted ``line``."""
    return call[1:] == line[1:] and call[0] in (ANY_LEVEL, line[0])


def test_every_line_quoted_is_one_the_broker_logs():
    calls = logging_calls()
    assert len(calls) >= 20, calls
    quoted = quoted_lines()
    assert len(quoted) >= 15, quoted
    unknown = sorted("%s %s: %s" % line for line in quoted if not any(logs(call, line) for call in calls))
    assert not unknown, "docs/monitoring.rst quotes lines the broker does not log:\n" + "\n".join(unknown)


def test_every_line_at_info_or_above_is_quoted():
    quoted = quoted_lines()
    unquoted = sorted("%s %s: %s" % (call[0] or "any level", call[1], call[2]) for call in logging_calls()
                      if call[0] != "DEBUG" and not any(logs(call, line) for line in quoted))
    assert not unquoted, "the broker logs lines docs/monitoring.rst does not quote:\n" + "\n".join(unquoted)
