"""Sphinx configuration of the documentation site: ``tox -e docs`` builds it into docs/_build/html.

The reference tables (flags, metrics, the dashboard's panels) are rendered
from the code by the local extension ``docs/_ext/broker_docs.py``, so they
cannot drift from what the broker does; the checkout is imported from here,
installed or not.
"""

import os
import sys

DOCS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(DOCS)
sys.path[:0] = [ROOT, os.path.join(DOCS, "_ext")]

import broker  # noqa: E402  (from the checkout, after the path is set)

project = "sockjs-broker"
author = "the sockjs-broker authors"
copyright = "the sockjs-broker authors"
version = release = broker.__version__

extensions = ["sphinxarg.ext", "broker_docs"]
# BENCHMARKS.rst, included by benchmarks.rst, names its figures from the checkout's root: docs/plots
# links there, so the same paths work on GitHub and here.
exclude_patterns = ["_build", "plots"]
root_doc = "index"
# Literal blocks are shell commands and output unless a code-block says otherwise.
highlight_language = "none"

html_theme = "furo"
html_title = "sockjs-broker %s" % release
html_static_path = ["_static"]
html_css_files = ["reference.css"]
