"""docs/sizing.rst's "Rooms": the command weighing a room with no message, run as written, prints
the bytes the page quotes, within a fifth: a room grown or shrunk by more, and the page not, fails
here. ``python`` is this interpreter; CPython only, as the page says (PyPy has no tracemalloc)."""

import platform
import re
import sys

import pytest

import doc_blocks

SIZING = doc_blocks.page("sizing")


@pytest.mark.skipif(platform.python_implementation() != "CPython", reason="tracemalloc is CPython's")
def test_the_empty_room_command_prints_the_bytes_the_page_quotes():
    with open(SIZING) as f:
        page = re.sub(r"\s+", " ", f.read())
    quoted = re.search(r"([\d,]+) bytes a room over 10,000 rooms", page)
    assert quoted, "the page quotes no bytes a room over 10,000 rooms"
    (command,) = doc_blocks.command_lines(doc_blocks.block_holding(SIZING, "tracemalloc.start()"))
    assert command.startswith("PYTHONPATH=. python -c ")
    printed = doc_blocks.run_shell(command.replace(" python -c ", " %s -c " % sys.executable, 1), timeout=120)
    measured, stated = float(printed), int(quoted.group(1).replace(",", ""))
    assert 0.8 * stated <= measured <= 1.2 * stated, "measured %d bytes a room, the page says %d" % (measured, stated)
