"""``python -m plots RESULTS.jsonl [-o DIR]``: the comparison, soak, rolling and rooms figures and the summary tables."""

import argparse
import os
import sys

from loadtest.results import files as results_files
from loadtest.results import summary


def build_parser():
    """The command line's parser: built without matplotlib, so that a command can be checked anywhere."""
    parser = argparse.ArgumentParser(prog="python -m plots", description=__doc__.split(":", 1)[1].strip())
    parser.add_argument("results", help="a results file written by python -m loadtest or one of its commands")
    parser.add_argument("-o", "--out", help="directory for the figures (default: next to the results file, "
                        "in a folder named after it)")
    return parser


def drawing():
    """:mod:`plots.figures`, or the exit that says what to install when matplotlib is missing."""
    try:
        from plots import figures
    except ImportError as missing:
        if missing.name is None or not missing.name.startswith("matplotlib"):
            raise
        sys.exit("python -m plots draws with matplotlib, which is not installed here: "
                 "pip install -e '.[plots]' (or pip install matplotlib)")
    return figures


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    figures = drawing()
    try:
        records = results_files.read(args.results)
    except (OSError, ValueError) as error:
        parser.exit(1, "plots: cannot read %s: %s\n" % (args.results, error))
    results = summary.Results(records)
    directory = args.out or os.path.splitext(args.results)[0]
    written, skipped = figures.write_all(results, directory)
    table = summary.summary_rst(results)
    table_path = os.path.join(directory, "summary.rst")
    with open(table_path, "w") as out:
        out.write(table)
    print(table)
    series = summary.rooms_series(results)
    if "rooms" not in skipped and series:
        print("rooms: CPU per delivery and round-trip p99 against the number of rooms (%s), %d load%s" % (
            ",".join(str(rooms) for rooms in sorted({run.rooms for run in results.many_rooms})), len(series),
            "" if len(series) == 1 else "s"), file=sys.stderr)
    print(drawn_line(written, directory), file=sys.stderr)
    return 0


def drawn_line(written, directory):
    """One line for what was drawn, out of the paths ``written``, and where: the figures the
    results hold measurements for and the summary table; the others are not named."""
    names = list(dict.fromkeys(os.path.splitext(os.path.basename(path))[0] for path in written))
    figures = "%s (PNG and SVG) and " % ", ".join(names) if names else "no figure (nothing to draw) and "
    return "drew %ssummary.rst in %s" % (figures, directory)


if __name__ == "__main__":
    sys.exit(main())
