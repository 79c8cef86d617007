"""``python -m loadtest``: one command line, a subcommand per scenario.

Rules:

- Each command is a module of :mod:`loadtest.scenarios` (of its name, or of :data:`MODULES`) with ``SUMMARY``, ``DESCRIPTION``,
  ``add_arguments(parser)``, ``run(parser, args)`` and perhaps ``EPILOG``; this module alone
  knows them all, by name (:data:`NAMES`).
- Without a command, the arguments are the latency sweep's: ``python -m loadtest --url URL``.
- Every option reads ``LOADTEST_<OPTION>`` as its default (:func:`loadtest.arguments.option`).
"""

import argparse
import importlib

# The commands, in the order --help lists them: each the module of loadtest.scenarios of its name.
NAMES = ("latency", "compare", "soak", "feed", "abuse", "ping", "selftest", "floor", "storm", "rolling", "rooms")
# A command whose module has another name: ``rooms`` names the broker's rooms (broker/core/rooms.py).
MODULES = {"rooms": "many_rooms"}
COMMANDS = {name: importlib.import_module("loadtest.scenarios." + MODULES.get(name, name)) for name in NAMES}
DEFAULT = "latency"


def build_parser():
    parser = argparse.ArgumentParser(
        prog="python -m loadtest",
        description="Round-trip latency load tests for SockJS broadcast servers, on loopback only. Without a "
        "command, the latency sweep runs: python -m loadtest --url URL --clients N.",
        epilog="Every option also reads an environment variable, named in its help: --client-cpu reads "
        "LOADTEST_CLIENT_CPU. python -m loadtest COMMAND --help describes a command.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in COMMANDS.items():
        command = commands.add_parser(name, help=module.SUMMARY, description=module.DESCRIPTION,
                                      epilog=getattr(module, "EPILOG", None))
        module.add_arguments(command)
        command.set_defaults(run=module.run, parser=command)
    return parser


def main(argv):
    """Run the command ``argv`` names (the latency sweep when it names none); its exit status."""
    argv = list(argv)
    if argv[:1] not in ([name] for name in COMMANDS) and argv[:1] not in (["-h"], ["--help"]):
        argv.insert(0, DEFAULT)
    args = build_parser().parse_args(argv)
    args.command_line = ["python", "-m", "loadtest"] + argv
    return args.run(args.parser, args)
