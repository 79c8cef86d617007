"""The literal blocks of the README and the docs pages, as a reader copies them.

A block is the indented text after a paragraph ending with ``::``, or after a
``.. code-block::`` or ``.. code::`` directive (whose ``:name:`` option names it),
unindented. Tests find a block by its name or by a string it holds, and run
what it says, changing only what must differ on a test machine (ports, paths),
by plain text substitution: a command that no longer matches fails to run.
"""

import os
import re
import subprocess
import textwrap
from typing import NamedTuple, Optional

from checkout import ROOT

README = os.path.join(ROOT, "README.rst")
DOCS = os.path.join(ROOT, "docs")
_DIRECTIVE = re.compile(r"^(\s*)\.\. (?:code-block|code|sourcecode)::")
_OPTION = re.compile(r"^\s*:([a-z-]+):\s*(.*)$")


class Block(NamedTuple):
    name: Optional[str]
    line: int
    """Where its text starts in the file, from 1."""
    text: str


def page(name):
    """The path of ``docs/<name>.rst``."""
    return os.path.join(DOCS, name + ".rst")


def indent_of(line):
    return len(line) - len(line.lstrip())


def literal_blocks(path):
    """Every literal block of the reStructuredText file at ``path``."""
    with open(path) as f:
        lines = f.read().splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        line = lines[i]
        directive = _DIRECTIVE.match(line)
        if directive is None and not (line.rstrip().endswith("::") and not line.lstrip().startswith("..")):
            i += 1
            continue
        outer = indent_of(line)
        name = None
        i += 1
        while directive is not None and i < len(lines) and _OPTION.match(lines[i]):
            option = _OPTION.match(lines[i])
            if option.group(1) == "name":
                name = option.group(2).strip()
            i += 1
        while i < len(lines) and not lines[i].strip():
            i += 1
        start = i
        while i < len(lines) and (not lines[i].strip() or indent_of(lines[i]) > outer):
            i += 1
        end = i
        while end > start and not lines[end - 1].strip():
            end -= 1
        if end > start:
            blocks.append(Block(name, start + 1, textwrap.dedent("\n".join(lines[start:end]))))
    return blocks


def named_block(path, name):
    """The text of the block named ``name`` (``:name:``) in the file at ``path``."""
    named = [block.text for block in literal_blocks(path) if block.name == name]
    assert len(named) == 1, "%s: %d blocks named %r" % (path, len(named), name)
    return named[0]


def block_holding(path, needle):
    """The text of the first block of the file at ``path`` that holds ``needle``."""
    for block in literal_blocks(path):
        if needle in block.text:
            return block.text
    raise AssertionError("%s: no literal block holds %r" % (path, needle))


def command_lines(text):
    """The commands of a shell block: one a line, a line ending with ``\\`` joined to the next,
    comments and blank lines left out."""
    commands = []
    pending = ""
    for line in text.splitlines():
        line = pending + line.strip()
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        pending = ""
        line = re.sub(r"\s+#.*$", "", line)
        if line and not line.startswith("#"):
            commands.append(line)
    return commands


def substituted(text, substitutions):
    """``text`` with each ``{old: new}`` of ``substitutions`` replaced."""
    for old, new in substitutions.items():
        text = text.replace(old, new)
    return text


def run_shell(command, cwd=ROOT, env=None, timeout=30):
    """Run one command line with bash, as a reader would paste it; its standard output.
    Fails with the command and what it printed unless it exits 0."""
    done = subprocess.run(["bash", "-c", "set -eo pipefail\n" + command], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ, **(env or {})))
    assert done.returncode == 0, "%s\nexited %d:\n%s%s" % (command, done.returncode, done.stdout, done.stderr)
    return done.stdout
