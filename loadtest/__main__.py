import sys

from loadtest.scenarios import latency

SUBCOMMANDS = {"ping": "loadtest.scenarios.ping", "selftest": "loadtest.scenarios.selftest", "compare": "loadtest.scenarios.compare",
               "soak": "loadtest.scenarios.soak", "abuse": "loadtest.scenarios.abuse", "feed": "loadtest.scenarios.feed"}


def main(argv):
    if argv and argv[0] in SUBCOMMANDS:
        module = __import__(SUBCOMMANDS[argv[0]], fromlist=["main"])
        return module.main(argv[1:])
    return latency.main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
