"""Sphinx directives that render the reference tables from the code (see :mod:`broker_reference`).

``.. broker-flags::``
    Every flag of ``python -m broker``: flag, environment variable, default, meaning.
``.. broker-metrics:: broker`` (or ``process``)
    Every metric of ``GET /metrics``: name, type, labels, help, and when it appears.
``.. grafana-panels::``
    The panels of ``deploy/grafana-dashboard.json`` and the queries each draws.
"""

import json
import os
import re

from docutils import nodes
from docutils.parsers.rst import Directive

import broker_reference

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DASHBOARD = os.path.join("deploy", "grafana-dashboard.json")
FLAG = re.compile(r"(--[a-z][a-z0-9-]*)")


def _text(text):
    """``text`` as inline nodes, each ``--flag`` in it as a literal."""
    parts = []
    for i, piece in enumerate(FLAG.split(text)):
        if piece:
            parts.append(nodes.literal(piece, piece) if i % 2 else nodes.Text(piece))
    return parts


def _cell(*content):
    entry = nodes.entry()
    paragraph = nodes.paragraph()
    for item in content:
        if isinstance(item, str):
            paragraph += nodes.Text(item)
        elif isinstance(item, list):
            paragraph.extend(item)
        else:
            paragraph += item
    entry += paragraph
    return entry


def _literal(text):
    return nodes.literal(text, text)


def _table(header, rows, widths, classes=()):
    table = nodes.table(classes=["broker-reference", "colwidths-given"] + list(classes))
    group = nodes.tgroup(cols=len(header))
    table += group
    for width in widths:
        group += nodes.colspec(colwidth=width)
    head = nodes.thead()
    row = nodes.row()
    for title in header:
        row += _cell(title)
    head += row
    group += head
    body = nodes.tbody()
    for cells in rows:
        row = nodes.row()
        for cell in cells:
            row += cell
        body += row
    group += body
    return table


class BrokerFlags(Directive):
    """Every flag of the broker's parser, built with an empty environment, grouped as it groups them."""

    has_content = False

    def run(self):
        env = self.state.document.settings.env
        env.note_dependency(os.path.join(ROOT, "broker", "config.py"))
        env.note_dependency(os.path.join(ROOT, "broker", "flags.py"))
        found = broker_reference.options(broker_reference.broker_parser())
        groups = list(dict.fromkeys(option.group for option in found))
        result = []
        for group in groups:
            rows = []
            for option in (option for option in found if option.group == group):
                flag = ", ".join(option.names) + ("" if option.metavar is None else " " + option.metavar)
                variable = "" if option.variable is None else option.variable + ("=1" if option.switch else "")
                names = nodes.entry()
                names += nodes.paragraph("", "", _literal(flag))
                if variable:
                    names += nodes.paragraph("", "", _literal(variable))
                rows.append([names, _cell(option.default), _cell(_text(option.meaning))])
            if len(groups) > 1:
                result.append(nodes.rubric(text=group))
            result.append(_table(["Flag and variable", "Default", "Meaning"], rows, [30, 15, 55]))
        return result


class BrokerMetrics(Directive):
    """The metrics of ``GET /metrics``: the broker's own (``broker``), or the process's and the
    interpreter's (``process``)."""

    required_arguments = 1
    option_spec = {}

    def run(self):
        env = self.state.document.settings.env
        which = self.arguments[0]
        if which == "broker":
            for path in ("broker/ops/metrics.py", "broker/ops/catalogue.py", "broker/core/figures.py",
                         "broker/cluster/state.py", "broker/ops/gc_policy.py"):
                env.note_dependency(os.path.join(ROOT, path))
            found = broker_reference.metric_catalogue()
        elif which == "process":
            found = broker_reference.process_metrics()
        else:
            raise self.error("broker-metrics takes broker or process, not %r" % which)
        if not found:
            return [nodes.paragraph(text="(none on the machine that built this page)")]
        rows = []
        for metric in found:
            labels = [name for name, _ in metric.labels]
            name = metric.samples[0] if len(metric.samples) == 1 else metric.name
            names = nodes.entry()
            names += nodes.paragraph("", "", _literal(name + ("{%s}" % ",".join(labels) if labels else "")))
            kind = metric.type
            if len(metric.samples) > 1:
                kind += ": " + ", ".join(sample[len(metric.name):] for sample in metric.samples)
            names += nodes.paragraph("", "", nodes.emphasis(text=kind))
            values = "; ".join("%s: %s" % (label, ", ".join(values)) for label, values in metric.labels if values)
            help_cell = _text(metric.help) + ([nodes.Text(" (" + values + ")")] if values else [])
            rows.append([names, _cell(help_cell), _cell(_text(metric.when))])
        return [_table(["Metric", "Help", "Appears"], rows, [46, 36, 18])]


class GrafanaPanels(Directive):
    """The dashboard's panels, each with its description and queries."""

    has_content = False

    def run(self):
        env = self.state.document.settings.env
        path = os.path.join(ROOT, DASHBOARD)
        env.note_dependency(path)
        with open(path) as f:
            dashboard = json.load(f)
        rows = []
        for panel in dashboard["panels"]:
            title = [nodes.strong(text=panel["title"])]
            if panel.get("description"):
                title.append(nodes.Text(": " + panel["description"]))
            queries = nodes.entry()
            for target in panel["targets"]:
                paragraph = nodes.paragraph()
                paragraph += _literal(target["expr"])
                queries += paragraph
            rows.append([_cell(title), queries])
        return [_table(["Panel", "Queries"], rows, [35, 65])]


def setup(app):
    app.add_directive("broker-flags", BrokerFlags)
    app.add_directive("broker-metrics", BrokerMetrics)
    app.add_directive("grafana-panels", GrafanaPanels)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
