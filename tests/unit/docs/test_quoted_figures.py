"""Every figure a page quotes from the benchmark report is in the section it names.

* A citation is the report's file name (or Sphinx's ``:doc:`` role naming it), a comma and a
  section's title in double quotes; several titles may follow, each after ``;``, ``,`` or
  ``and``. A title names the report's section that begins with it, subsections included, and
  its prose and tables, not its commands, hold the figures.
* The text a citation covers is the sentence holding it or, in a table, its row (with the
  rows continuing it); a sentence citing several sections may quote from any of them.
* A figure is a number with a unit after it: ``us`` or ``µs``, ``ms``, ``s``, ``KiB``, ``MiB``,
  ``KB``, ``MB``, ``%``, or ``x`` (a ratio). Each must be written in one of
  the cited sections, or be one of them rounded (``9 us`` for 9.08): a figure changed in the
  report and not on the page, or the other way round, fails here. In a table row, every number
  with a decimal point is a figure too (``9 us (CPython 9.08, PyPy 9.17)``).
* Arithmetic on measured figures belongs in a sentence without a citation, so that it reads as
  arithmetic.
* The report itself is at most ``REPORT_LINES`` lines, and every section names, in its own text
  (above its first subsection), the machine its figures come from: one of ``MACHINES``.
"""

import re

import pytest

import documentation

REPORT = "BENCHMARKS.rst"
REPORT_LINES = 360
MACHINES = ("Xeon", "EPYC")  # the report's two machines, which its top describes
CITATION = re.compile(r'(?:BENCHMARKS\.rst|:doc:`benchmarks`),?\s+((?:"[^"]+"(?:;\s*|,\s*(?=")|\s+and\s+(?="))?)+)')
TITLE = re.compile(r'"([^"]+)"')
NUMBER = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
FIGURE = re.compile(r"(?<![\w.,])(%s)(?:\s*(?:to|-|/|and)\s*(?:%s))*\s?(us|µs|ms|s|KiB|MiB|KB|MB|%%|x)(?!\w)" % (NUMBER, NUMBER))
NUMBER_IN = re.compile(NUMBER)
UNDERLINE = re.compile(r"^([-~=])\1{3,}$")
TABLE_BORDER = re.compile(r"^=+(?:\s+=+)+$")
DECIMAL = re.compile(r"(?<![\w.,])\d+\.\d+(?![\w.])")
_ROW = "row: "
SENTENCE_END = re.compile(r"\.\s|\n\s*\n")


def _heads(lines):
    """``(index, title, underline character)`` of every title of ``lines``."""
    return [(number - 1, lines[number - 1], line[0]) for number, line in enumerate(lines)
            if number and UNDERLINE.match(line) and len(line) >= len(lines[number - 1]) > 0
            and not TABLE_BORDER.match(lines[number - 1])]


def sections(text):
    """``{title: text}`` of the report's sections, a section's text holding its subsections'."""
    lines = text.splitlines()
    heads = _heads(lines)
    found = {}
    for index, (start, title, level) in enumerate(heads):
        end = next((other for other, _, deeper in heads[index + 1:] if deeper == level or deeper == "="),
                   len(lines))
        found[title.strip()] = "\n".join(lines[start:end])
    return found


def _prose(text):
    """``text`` without its commands: literal blocks and inline literals hold flags, not figures."""
    text = documentation.INLINE_LITERAL.sub(" ", text)
    return "\n".join(line for line in text.splitlines() if not line.startswith("    "))


def normal(figure):
    return figure.replace(",", "")


def numbers_in(text):
    return {normal(number) for number in NUMBER_IN.findall(text)}


def unwritten(quoted, written):
    """The numbers of ``quoted`` that are not in ``written``, nor one of them rounded."""
    def rounded(number):
        places = len(number.partition(".")[2])
        return any(round(float(other), places) == float(number) for other in written)
    return {number for number in numbers_in(quoted) if number not in written and not rounded(number)}


def covered_texts(text):
    """``(line, covered text, cited titles)`` for every sentence or table row of ``text`` that
    cites the report, with the titles of all its citations."""
    lines = text.splitlines()
    covered = {}
    for match in CITATION.finditer(text):
        number = documentation.line_of(text, match.start())
        row = _table_row(lines, number - 1)
        if row is not None:
            span = (number, _ROW + row)
        else:
            start = max([0] + [end.end() for end in SENTENCE_END.finditer(text, 0, match.start())])
            after = SENTENCE_END.search(text, match.end())
            end = after.start() if after else len(text)
            span = (documentation.line_of(text, start + 1), text[start:end])
        covered.setdefault(span, []).extend(" ".join(title.split()) for title in TITLE.findall(match.group(1)))
    return [(number, words, titles) for (number, words), titles in covered.items()]


def _table_row(lines, index):
    """The row of a simple table holding line ``index`` (its continuation lines joined), or None."""
    above = lines[:index]
    borders = [number for number, line in enumerate(above) if TABLE_BORDER.match(line.strip())]
    if not borders or any(not line.strip() for line in above[borders[-1]:]):
        return None
    row = [lines[index]]
    for line in lines[index + 1:]:
        if not line.strip() or TABLE_BORDER.match(line.strip()) or not line.startswith(" "):
            break
        row.append(line)
    # The citation's own column is not a figure: keep what comes before it.
    return " ".join(part.split(":doc:")[0].split("BENCHMARKS.rst")[0] for part in row)


def citations():
    report = sections(documentation.pages()[1][1])
    for path, text in documentation.pages():
        if path == REPORT:
            continue
        for number, covered, titles in covered_texts(text):
            yield "%s:%d" % (path, number), covered, titles, report


CITATIONS = list(citations())


def test_the_pages_cite_the_report():
    assert len(CITATIONS) >= 20, "the citations are no longer found: %d" % len(CITATIONS)


@pytest.mark.parametrize("where, covered, titles, report", CITATIONS, ids=[c[0] for c in CITATIONS])
def test_each_quoted_figure_is_in_the_section_cited(where, covered, titles, report):
    cited = []
    for title in titles:
        matching = [text for name, text in report.items() if name.startswith(title)]
        assert matching, "%s cites %r, which is no section of %s" % (where, title, REPORT)
        cited.append(matching[0])
    written = numbers_in(_prose("\n".join(cited)))
    figures = [figure.group(0) for figure in FIGURE.finditer(covered)]
    if covered.startswith(_ROW):
        figures += DECIMAL.findall(covered)
    for figure in figures:
        missing = unwritten(figure, written)
        assert not missing, "%s quotes %r, but %s is not in %s, %s" % (
            where, figure, ", ".join(sorted(missing)), REPORT, "; ".join('"%s"' % t for t in titles))


def test_a_figure_changed_on_one_side_fails():
    report = {"Fan-out cost": "CPU per delivery 9.08 us, floor 7.1 us"}
    page = 'It costs 9.08 us a delivery (BENCHMARKS.rst, "Fan-out cost").'
    (_, covered, titles), = covered_texts(page)
    assert titles == ["Fan-out cost"]
    written = numbers_in(report["Fan-out cost"])
    assert not any(unwritten(f.group(0), written) for f in FIGURE.finditer(covered))
    assert not unwritten("9 us", written)
    for changed in (page.replace("9.08", "9.18"), page.replace("9.08 us", "9.2 us")):
        (_, covered, _), = covered_texts(changed)
        assert any(unwritten(f.group(0), written) for f in FIGURE.finditer(covered)), changed


def own_texts(text):
    """``{title: text}`` of every section down to its first subsection, or the next section."""
    lines = text.splitlines()
    heads = _heads(lines)
    ends = [start for start, _, _ in heads[1:]] + [len(lines)]
    return {title.strip(): "\n".join(lines[start + 2:end]) for (start, title, _), end in zip(heads, ends)}


def report_text():
    (text,) = [text for path, text in documentation.pages() if path == REPORT]
    return text


def test_the_report_is_at_most_its_length():
    lines = len(report_text().splitlines())
    assert lines <= REPORT_LINES, "%s is %d lines, over %d" % (REPORT, lines, REPORT_LINES)


def test_every_section_of_the_report_names_its_machine():
    texts = own_texts(report_text())
    assert len(texts) >= 10, "the report's titles are no longer found: %s" % sorted(texts)
    unnamed = [title for title, own in texts.items() if not any(machine in own for machine in MACHINES)]
    assert unnamed == [], "sections of %s that name no machine (%s)" % (REPORT, " or ".join(MACHINES))


def test_a_section_naming_no_machine_is_found():
    page = "Top\n====\n\nOn Xeon.\n\nA\n----\n\nEPYC, one run.\n\nB\n----\n\none run, nowhere.\n"
    texts = own_texts(page)
    assert sorted(texts) == ["A", "B", "Top"]
    assert [title for title, own in texts.items() if not any(m in own for m in MACHINES)] == ["B"]
