"""What docs/compatibility.rst promises is what the code has, both ways.

* The page's lists are its sections' tables' rows and ``hlist`` items that start with a
  literal: ````3012````, ````--host````  ````BROKER_HOST````, ````POST /publish```` followed
  by its statuses.
* Close codes: every code of ``broker/protocol/close_codes.py``
  (:func:`documentation.closes`), once.
* Flags and variables: every flag of the broker's parser with the variable its help names
  (:func:`documentation.reference`, as the configuration page is built).
* Metrics: every family of the collector in every mode the broker runs in (the monitoring
  page's catalogue), as a scrape names it: a counter with ``_total``, with its type.
* Statuses: each endpoint ``make_app`` in ``broker/app.py`` routes to a handler of its own,
  with every status that handler's method can answer, read from its source: the literal
  status of each ``self.reply(...)`` and ``self.set_status(...)`` it reaches through the
  methods of its class and bases it calls, and 200 where it finishes a response without
  setting one (Tornado's default).
* ``/stats`` keys: the top-level keys of the monitoring page's sample, which
  ``tests/docs/test_stats_sample.py`` holds to a live broker's, and the keys only a PyPy
  broker or one over TLS has, which the sample cannot show.
* Results files: the ``"type"`` of every record of ``loadtest/records.py``.
"""

import ast
import inspect
import json
import os
import re

import doc_blocks
import documentation
from checkout import ROOT

PAGE = os.path.join(ROOT, "docs", "compatibility.rst")
ROW = re.compile(r"^``(?P<name>[^`]+)``(?P<rest>.*)$")
ITEM = re.compile(r"^\s+- ``(?P<name>[^`]+)``(?P<rest>)$")
HEADING = re.compile(r"^([=~-])\1{3,}$")
TABLE_RULE = re.compile(r"^=+(?: +=+)+$")
# Top-level /stats keys the monitoring page's sample (a CPython broker over plain HTTP) cannot show.
STATS_KEYS_NOT_SAMPLED = {"jit", "tls"}
# The methods of a handler Tornado calls for a request.
HTTP_METHODS = ("get", "post", "put", "delete", "patch", "head")


def sections():
    """``{title: [(name, rest of its line)]}`` of the page's listed lines, by section: the rows
    of a simple table's body (after its head's rule), and the items of an ``hlist``."""
    with open(PAGE, encoding="utf-8") as f:
        lines = f.read().split("\n")
    found, title, rules = {}, None, 0
    for index, line in enumerate(lines):
        if index + 1 < len(lines) and HEADING.match(lines[index + 1]) and line.strip():
            title, rules = line.strip(), 0
            continue
        rules += bool(TABLE_RULE.match(line))
        listed = ITEM.match(line) or (ROW.match(line) if rules % 3 == 2 else None)
        if listed and title is not None:
            found.setdefault(title, []).append((listed.group("name"), listed.group("rest").strip()))
    return found


def listed(title):
    return sections()[title]


def test_the_close_codes_listed_are_the_brokers():
    page = [int(name) for name, _ in listed("Close codes")]
    assert len(page) == len(set(page)), "a close code listed twice"
    assert set(page) == set(documentation.closes().values())


def test_the_flags_listed_are_the_brokers_with_their_variables():
    reference = documentation.reference()
    code = {(name, option.variable) for option in reference.options(reference.broker_parser())
            for name in option.names}
    page = {(flag, rest.strip("`")) for flag, rest in listed("Flags and variables")}
    assert page == code, "listed, not the broker's: %s; the broker's, not listed: %s" % (page - code, code - page)


def test_the_metrics_listed_are_the_collectors_with_their_types():
    code = {(metric.name + "_total" if metric.type == "counter" else metric.name, metric.type)
            for metric in documentation.reference().metric_catalogue()}
    page = set(listed("Metrics"))
    assert page == code, "listed, not the broker's: %s; the broker's, not listed: %s" % (page - code, code - page)


def test_the_stats_keys_listed_are_the_brokers():
    sample = json.loads(doc_blocks.named_block(doc_blocks.page("monitoring"), "stats-sample"))
    page = [name for name, _ in listed("``/stats`` keys")]
    assert len(page) == len(set(page))
    assert set(page) == set(sample) | STATS_KEYS_NOT_SAMPLED


def test_the_results_file_types_listed_are_the_load_clients():
    from loadtest import records

    code = {kind.TYPE for kind in vars(records).values()
            if inspect.isclass(kind) and issubclass(kind, records.Record) and kind.TYPE}
    page = [name for name, _ in listed("Results files of the load client")]
    assert len(page) == len(set(page))
    assert set(page) == code


class Module:
    """The classes of one module of the broker, read from its source."""

    def __init__(self, dotted):
        with open(os.path.join(ROOT, *dotted.split(".")) + ".py", encoding="utf-8") as f:
            tree = ast.parse(f.read())
        self.classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}

    def methods(self, name):
        """``{method name: its def}`` of class ``name`` and of its bases in this module, the class's first."""
        found = {}
        for base in self.classes[name].bases:
            if isinstance(base, ast.Name) and base.id in self.classes:
                found.update(self.methods(base.id))
        found.update({node.name: node for node in self.classes[name].body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))})
        return found

    def statuses(self, name, method):
        """Every status ``method`` of class ``name`` can answer (see the module's rules)."""
        methods, found, seen = self.methods(name), set(), set()
        waiting = [method]
        while waiting:
            current = waiting.pop()
            if current in seen:
                continue
            seen.add(current)
            sets_status = finishes = False
            for node in ast.walk(methods[current]):
                called = _self_call(node)
                if called in ("reply", "set_status"):
                    sets_status = True
                    if isinstance(node.args[0], ast.Constant):
                        found.add(node.args[0].value)
                if called == "finish":
                    finishes = True
                if called in methods:
                    waiting.append(called)
            if finishes and not sets_status:
                found.add(200)
        return found


def _self_call(node):
    """The name of the method of ``self`` that ``node`` calls, or None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        owner = node.func.value
        if isinstance(owner, ast.Name) and owner.id == "self":
            return node.func.attr
    return None


def endpoints():
    """``{"METHOD /path": statuses}`` of every route ``make_app`` lists with its handler."""
    with open(os.path.join(ROOT, "broker", "app.py"), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    imported = {alias.asname or alias.name: "%s.%s" % (node.module, alias.name)
                for node in tree.body if isinstance(node, ast.ImportFrom) for alias in node.names}
    make_app = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "make_app")
    found = {}
    for route in ast.walk(make_app):
        if not (isinstance(route, ast.Tuple) and isinstance(route.elts[0], ast.Constant)
                and isinstance(route.elts[1], ast.Attribute)):
            continue
        path, handler = route.elts[0].value, route.elts[1]
        module = Module(imported[handler.value.id])
        for method in HTTP_METHODS:
            if method in module.methods(handler.attr):
                found["%s %s" % (method.upper(), path)] = module.statuses(handler.attr, method)
    return found


def test_the_endpoints_and_statuses_listed_are_the_handlers():
    code = endpoints()
    assert code, "no endpoint found in broker/app.py's make_app"
    page = {name: {int(status) for status in rest.split(",")} for name, rest in listed("HTTP statuses")}
    assert page == code
