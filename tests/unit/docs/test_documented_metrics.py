"""Every metric the documentation names is one the broker's collector yields.

The catalogue is the monitoring page's (``docs/_ext/broker_reference.py``):
the collector built over a broker's parts in each mode it runs in, so a metric
of PyPy, or of ``--redis``, is known here whatever the interpreter and with no
Redis. A name is written as a scrape shows it (a counter's ``_total``, a
histogram's ``_bucket``, ``_sum`` or ``_count``) or as its family; one
ending in ``_`` (``sockjs_broker_backplane_``) names those it starts.
``tests/docs/test_metrics_documented_are_live.py`` checks the same names, and
the catalogue, against a live broker's ``/metrics``.
"""

import re

import pytest

import documentation

METRIC = re.compile(r"\bsockjs_broker_[a-z_]+")
FILES = documentation.pages() + documentation.deploy_files()


def catalogue_names():
    names = set()
    for metric in documentation.reference().metric_catalogue():
        names.add(metric.name)
        names.update(metric.samples)
    return names


def written(text):
    """``(offset, name)`` of each metric name in ``text``."""
    return [(match.start(), match.group(0)) for match in METRIC.finditer(text)]


def unknown(name, known):
    """True if ``name`` is no metric of ``known``, nor (ending in ``_``) the start of one."""
    if name.endswith("_"):
        return not any(other.startswith(name) for other in known)
    return name not in known


@pytest.mark.parametrize("path, text", FILES, ids=[path for path, _ in FILES])
def test_every_metric_written_is_the_collectors(path, text):
    known = catalogue_names()
    wrong = ["%s:%d: %s is not a metric of the broker" % (path, documentation.line_of(text, offset), name)
             for offset, name in written(text) if unknown(name, known)]
    assert not wrong, "\n".join(wrong)


def test_the_catalogue_knows_each_mode():
    """Every mode adds what only it yields, so that the page can say when each metric appears."""
    metrics = documentation.reference().metric_catalogue()
    firsts = {metric.when.split(" (")[0] for metric in metrics}
    assert firsts == {mode.label for mode in documentation.reference().MODES}
    assert len(metrics) == len({metric.name for metric in metrics})
