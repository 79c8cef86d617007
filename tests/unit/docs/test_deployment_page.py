"""The deployment page's configuration fragments are the shipped files' own: the TLS lines of
``deploy/haproxy.cfg`` and ``deploy/nginx.conf`` (marked ``#tls`` there) and the Redis settings of ``deploy/redis.md``,
so what a reader copies from the page is what the tests run."""

import os

import pytest

import doc_blocks
from checkout import ROOT
from loadtest.contenders.haproxy import TLS_LINE

DEPLOYMENT = doc_blocks.page("deployment")


def settings(text):
    """The lines of ``text`` that say something: no blank line, no comment, spaces collapsed."""
    return [" ".join(line.split()) for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def shipped(name):
    with open(os.path.join(ROOT, "deploy", name)) as f:
        return f.read()


@pytest.mark.parametrize("config, first_line, lines", [("haproxy.cfg", "bind :443", 2),
                                                      ("nginx.conf", "listen 443 ssl;", 4)])
def test_the_tls_lines_are_the_shipped_configs_with_their_mark_removed(config, first_line, lines):
    marked = [line.strip()[len(TLS_LINE):] for line in shipped(config).splitlines()
              if line.strip().startswith(TLS_LINE)]
    assert len(marked) == lines, marked
    assert settings(doc_blocks.block_holding(DEPLOYMENT, first_line)) == [" ".join(line.split()) for line in marked]


def test_the_redis_settings_are_the_ones_deploy_redis_md_adds():
    page = settings(doc_blocks.block_holding(DEPLOYMENT, "appendonly yes"))
    # redis.md is Markdown: its code is the indented lines, the settings among them in a run.
    code = settings("\n".join(line for line in shipped("redis.md").splitlines() if line.startswith("    ")))
    start = code.index(page[0]) if page and page[0] in code else -1
    assert "appendonly yes" in page and code[start:start + len(page)] == page, (page, code)
