"""The figures README.rst and BENCHMARKS.rst show are in the checkout, and every figure an
image's alternative text quotes (``5.32 us``) is in the ``summary.rst`` that ``python -m plots``
wrote beside that image from the same results."""

import os
import re

import pytest

from checkout import ROOT

PAGES = ("README.rst", "BENCHMARKS.rst")
IMAGE = re.compile(r"^\.\. image:: (\S+)\n((?:[ \t]+.*\n)*)", re.MULTILINE)
QUOTED = re.compile(r"(\d+(?:\.\d+)?) us\b")


def figures_shown():
    """``(page, image path, the directive's indented options)`` for every image the pages show."""
    for page in PAGES:
        with open(os.path.join(ROOT, page)) as f:
            for match in IMAGE.finditer(f.read()):
                yield page, match.group(1), match.group(2)


SHOWN = list(figures_shown())


def test_the_readme_shows_the_reference_figures():
    shown = [path for page, path, _ in SHOWN if page == "README.rst"]
    assert shown == ["plots/reference/by-transport/by_transport.png"]


@pytest.mark.parametrize("page, path, options", SHOWN, ids=["%s:%s" % (page, path) for page, path, _ in SHOWN])
def test_each_figure_shown_is_there_and_its_alternative_text_is_its_summarys(page, path, options):
    assert os.path.isfile(os.path.join(ROOT, path)), "%s shows %s, which is not in the checkout" % (page, path)
    quoted = QUOTED.findall(options)
    if not quoted:
        return
    with open(os.path.join(ROOT, os.path.dirname(path), "summary.rst")) as f:
        summary = set(re.findall(r"\d+(?:\.\d+)?", f.read()))
    assert [value for value in quoted if value not in summary] == [], "%s's text for %s" % (page, path)
