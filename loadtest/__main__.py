import sys

from loadtest.command_line import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
