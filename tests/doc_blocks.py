"""The literal blocks of the README and the docs pages, as a reader copies them, and how tests run them.

A block (read by :func:`documentation.literal_blocks`) is the indented text after a paragraph
ending with ``::``, or after a ``.. code-block::`` or ``.. code::`` directive (whose ``:name:``
option names it), unindented. Tests find a block by its name or by a string it holds, and run
what it says, changing only what must differ on a test machine (ports, paths), by plain text
substitution: a command that no longer matches fails to run.
"""

import os
import re
import subprocess

import documentation
from checkout import ROOT

README = os.path.join(ROOT, "README.rst")
DOCS = os.path.join(ROOT, "docs")


def page(name):
    """The path of ``docs/<name>.rst``."""
    return os.path.join(DOCS, name + ".rst")


def literal_blocks(path):
    """Every literal block (:class:`documentation.Block`) of the file at ``path``."""
    with open(path) as f:
        return documentation.literal_blocks(f.read())


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
