import sys

from loadtest import cli

SUBCOMMANDS = {"ping": "loadtest.ping", "selftest": "loadtest.selftest", "compare": "loadtest.compare",
               "soak": "loadtest.soak", "abuse": "loadtest.abuse", "feed": "loadtest.feed"}


def main(argv):
    if argv and argv[0] in SUBCOMMANDS:
        module = __import__(SUBCOMMANDS[argv[0]], fromlist=["main"])
        return module.main(argv[1:])
    return cli.main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
