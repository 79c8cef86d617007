"""What the documentation says of flags and variables is what the parsers do.

* The configuration page's table (generated from the broker's parser, see
  ``docs/_ext/broker_reference.py``) gives each flag the variable that sets it
  as the flag does, and a default that, typed back, is the parser's.
* Every ``--flag`` the pages write is one of ours. In a command that runs the
  broker (``python -m broker``, ``sockjs-broker``) it is the broker's; in one
  that runs the load client (``python -m loadtest [COMMAND]``, or a literal
  starting with a command's name, ``compare --tls``) that command's; in one
  that runs the plots or the SockJS conformance server, theirs. Alone (prose,
  or a literal starting with the flag) it is any of our parsers' or a known
  other program's (:data:`FOREIGN`).
  A flag of another program's command line (``npm ci --omit=dev``, the
  interpreter's before ``-m``) is left alone.
* Every ``BROKER_*`` variable the pages and deploy/'s files write is a
  broker flag's, every ``LOADTEST_*`` one a load-client option's.
* A default stated the way the configuration page states it, right after
  the flag or variable (````--max-buffer````, default 1 MiB; ````--history````
  (default 1000); ````BROKER_DRAIN_SECONDS````, default 10), is the parser's:
  typed as the flag's value, it gives the parser's default. A unit the text adds
  (``s``, ``seconds``) is dropped, a size's kept (64 KiB is 65536).
"""

import ast
import os
import re

import pytest

import documentation
from checkout import ROOT

FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
VARIABLE = re.compile(r"\b((?:BROKER|LOADTEST)_[A-Z0-9_]*[A-Z0-9])\b")
INVOCATION = re.compile(r"(?:^|\s)(?:\S*/)?(?:python3?(?:\.\d+)?|pypy3?)(?:\s.*?)??\s-m\s+(?P<module>[\w.]+)(?=\s|$)")
# The broker's command, as the first word of a command line (a unit's ExecStart= included).
BROKER_COMMAND = re.compile(r"^(?:ExecStart=)?(?:\S*/)?sockjs-broker$")
# The first word of another program's command line (npm, systemctl, redis-server, .autobahn/wstest).
PROGRAM = re.compile(r"^(?:\S*/)?[A-Za-z][\w.+@-]*$")
ASSIGNMENT = re.compile(r"^[A-Z_][A-Z0-9_]*=")
SEPARATOR = re.compile(r"&&|\|\||;|\|(?!\w)|&(?=\s|$)")
# ``python -m loadtest ... --broker-flags "--max-accept-rate 300"``: the quoted flags are the broker's.
BROKER_FLAGS_VALUE = re.compile(r'--broker-flags[= ]"([^"]*)"')
# Flags of other programs that the pages mention on their own, and whose they are.
FOREIGN = {"--jit": "pypy3", "--omit": "npm ci"}
STATED = re.compile(
    r"``(?P<name>--[a-z][a-z0-9-]*|BROKER_[A-Z0-9_]+)(?: [A-Z]+)?``(?: seconds)?(?:,| \()\s*default:?\s+"
    r"(?P<value>``[^`]+``|[^\s,;:)]+(?: (?:s|seconds|KiB|MiB|B|bytes)\b)?)")


def option_strings(parser):
    return {name for action in parser._actions for name in action.option_strings}


def source_flags(path):
    """The flags a command's ``main()`` adds to the parser it builds there, read from its
    source (``python -m plots`` builds it beside a matplotlib import, which the
    interpreter under test may lack)."""
    with open(os.path.join(ROOT, path)) as f:
        tree = ast.parse(f.read())
    return {argument.value for node in ast.walk(tree)
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument"
            for argument in node.args
            if isinstance(argument, ast.Constant) and str(argument.value).startswith("--")} | {"--help"}


class Parsers:
    def __init__(self):
        reference = documentation.reference()
        self.broker = reference.broker_parser()
        self.broker_flags = option_strings(self.broker)
        loadtest = reference.loadtest_parser()
        self.loadtest = {command: option_strings(parser) for command, parser in reference.subparsers(loadtest)}
        # Commands of ours whose parsers are built inside their main().
        self.others = {"plots": source_flags("plots/__main__.py"),
                       "broker.conformance": source_flags("broker/conformance.py")}
        self.every = set(self.broker_flags).union(*self.others.values(), *self.loadtest.values())
        self.broker_variables = {option.variable for option in reference.options(self.broker)}
        self.loadtest_variables = {option.variable for _, parser in reference.subparsers(loadtest)
                                   for option in reference.options(parser) if option.variable}

    def loadtest_flags(self, words):
        """The flags of the load client's command that ``words`` (after ``-m loadtest``) run."""
        command = words[0] if words and words[0] in self.loadtest else "latency"
        return self.loadtest[command] | self.loadtest[""]


@pytest.fixture(scope="module")
def parsers():
    return Parsers()


def flags_of(code, parsers):
    """``(flag, whose flags it must be among, whose)`` of each flag of one logical line of code."""
    found = []
    for command in SEPARATOR.split(code):
        words = [word for word in command.split() if not ASSIGNMENT.match(word)]
        invocation = INVOCATION.search(command)
        if invocation is not None:
            module, after = invocation.group("module"), invocation.end()
        elif words and BROKER_COMMAND.match(words[0]):
            module, after = "broker", 0
        else:
            module, after = None, 0
        passed_on = [quoted.span(1) for quoted in BROKER_FLAGS_VALUE.finditer(command)]
        for match in FLAG.finditer(command):
            flag = match.group(0)
            if any(start <= match.start() < end for start, end in passed_on):
                found.append((flag, parsers.broker_flags, "python -m broker (through --broker-flags)"))
            elif module is not None:
                if match.start() < after:
                    continue  # the interpreter's, or a wrapper's (taskset, prlimit)
                if module == "broker":
                    found.append((flag, parsers.broker_flags, "python -m broker"))
                elif module == "loadtest":
                    found.append((flag, parsers.loadtest_flags(command[after:].split()), "python -m loadtest"))
                elif module in parsers.others:
                    found.append((flag, parsers.others[module], "python -m " + module))
                # else: another module's (python -m pytest, python -m venv)
            elif words and words[0] in parsers.loadtest:
                found.append((flag, parsers.loadtest_flags(words), "python -m loadtest " + words[0]))
            elif words and PROGRAM.match(words[0]):
                continue  # another program's command line
            else:
                found.append((flag, parsers.every | set(FOREIGN), "any of our commands"))
    return found


@pytest.mark.parametrize("path, text", documentation.pages(), ids=[path for path, _ in documentation.pages()])
def test_every_flag_written_is_a_flag_of_ours(path, text, parsers):
    code, prose = documentation.split(text)
    wrong = []
    for line, snippet in code:
        for flag, known, whose in flags_of(snippet, parsers):
            if flag not in known:
                wrong.append("%s:%d: %s is not a flag of %s (in %r)" % (path, line, flag, whose, snippet))
    for match in FLAG.finditer(prose):
        flag = match.group(0)
        if flag not in parsers.every and flag not in FOREIGN:
            wrong.append("%s:%d: %s is not a flag of any of our commands (another program's? then FOREIGN "
                         "should say whose)" % (path, documentation.line_of(prose, match.start()), flag))
    assert not wrong, "\n".join(wrong)


# Variables renamed and still read until 2.0 (docs/compatibility.rst, "Deprecations"): each with a
# program (the broker, or a load client's command), the attribute it sets and the value "7" gives it.
DEPRECATED_VARIABLES = {
    "BROKER_WARM_UP": ("broker", "warm_up", 7),
    "LOADTEST_WARM_UP": ("compare", "warm_up", 7.0),
}


@pytest.mark.parametrize("name", sorted(DEPRECATED_VARIABLES))
def test_a_deprecated_variable_still_sets_its_flag(name, monkeypatch):
    program, dest, value = DEPRECATED_VARIABLES[name]
    if program == "broker":
        from broker import config
        parsed = config.build_parser({name: "7"}).parse_args([])
    else:
        from loadtest import command_line
        monkeypatch.setenv(name, "7")
        parsed = command_line.build_parser().parse_args([program])
    assert getattr(parsed, dest) == value


@pytest.mark.parametrize("path, text", documentation.pages() + documentation.deploy_files(),
                         ids=[path for path, _ in documentation.pages() + documentation.deploy_files()])
def test_every_variable_written_sets_a_flag(path, text, parsers):
    wrong = []
    for match in VARIABLE.finditer(text):
        name = match.group(1)
        known = parsers.broker_variables if name.startswith("BROKER_") else parsers.loadtest_variables
        if name not in known and name not in DEPRECATED_VARIABLES:
            whose = "python -m broker" if name.startswith("BROKER_") else "python -m loadtest"
            wrong.append("%s:%d: %s is not the variable of a flag of %s" % (
                path, documentation.line_of(text, match.start()), name, whose))
    assert not wrong, "\n".join(wrong)


def broker_value(dest, argv=(), environ=None):
    """The value of ``dest`` the broker's parser gives for ``argv`` and ``environ`` (default: none)."""
    from broker import config
    return getattr(config.build_parser(environ or {}).parse_args(list(argv)), dest)


def broker_options():
    reference = documentation.reference()
    return reference.options(reference.broker_parser())


def stated_value(text):
    """A stated default as it would be typed: ``64 KiB`` stays (a size), ``20 s`` is ``20``."""
    text = text.strip("`").strip()
    return re.sub(r"\s+(?:s|seconds)$", "", text)


@pytest.mark.parametrize("path, text", documentation.pages(), ids=[path for path, _ in documentation.pages()])
def test_every_default_stated_is_the_parsers(path, text):
    options = {}
    for option in broker_options():
        for name in option.names + (option.variable,):
            options[name] = option
    wrong = []
    for match in STATED.finditer(text):
        name, stated = match.group("name"), match.group("value")
        option = options.get(name)
        if option is None:
            continue  # a load-client option (an unknown name fails the tests above)
        where = "%s:%d" % (path, documentation.line_of(text, match.start()))
        given = stated_value(stated)
        if option.switch:
            if given != "off":
                wrong.append("%s: %s is a switch, off unless given; the text says %r" % (where, name, stated))
            continue
        default = broker_value(option.dest)
        if given == "none":
            if default is not None:
                wrong.append("%s: %s defaults to %s; the text says none" % (where, name, option.default))
            continue
        try:
            typed = broker_value(option.dest, [option.names[0], given])
        except SystemExit:
            wrong.append("%s: %s does not take %r, the default the text states" % (where, name, stated))
            continue
        if typed != default:
            wrong.append("%s: %s defaults to %s; the text says %r" % (where, name, option.default, stated))
    assert not wrong, "\n".join(wrong)


def test_help_names_each_flags_variable():
    from broker import config
    text = " ".join(config.build_parser({}).format_help().split())
    for flag in config.FLAGS:
        assert "[%s" % flag.variable("BROKER_") in text, "--help does not name %s's variable" % flag.name


def test_the_configuration_page_lists_every_flag_once():
    from broker import config
    listed = [name for option in broker_options() for name in option.names]
    assert sorted(listed) == sorted(flag.name for flag in config.FLAGS)


@pytest.mark.parametrize("option", broker_options(), ids=lambda option: option.names[0])
def test_each_row_of_the_configuration_page_is_what_the_parser_does(option):
    """The generated table's variable sets the flag as the flag does; its default, typed back, is the parser's."""
    from broker.flags import variable
    name, dest = option.names[0], option.dest
    assert option.variable == variable("BROKER_", name), "the page names another variable for %s" % name
    if option.switch:
        assert option.default == "off"
        assert broker_value(dest) != broker_value(dest, [name]) == broker_value(dest, environ={option.variable: "1"})
        return
    given = option.default.split(": ")[0].strip()
    if given == "none":
        assert broker_value(dest) is None, "%s defaults to %r, the page says none" % (name, broker_value(dest))
        return
    assert broker_value(dest) == broker_value(dest, [name, given]), "%s defaults to %r, the page says %r" % (
        name, broker_value(dest), option.default)
    assert broker_value(dest, environ={option.variable: given}) == broker_value(dest, [name, given])
