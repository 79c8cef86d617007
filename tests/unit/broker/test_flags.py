"""Flags from a table: the variable sets the default, the flag wins, --help says both."""

import argparse

import pytest

from broker.flags import Environment, Flag, Parser

FLAGS = (
    Flag("--max-buffer", "unsent bytes allowed", "1024", int, "SIZE"),
    Flag("--token", "a secret", secret=True),
    Flag("--quiet", "say less", switch=True),
    Flag("--no-echo", "do not echo", switch=True, inverted=True, dest="echo"),
    Flag("--warm-up-sessions", "sessions first", "0", int, "SESSIONS", dest="warm_up", formerly="--warm-up"),
)


def parse(argv=(), environ=None):
    parser = argparse.ArgumentParser(prog="demo")
    Environment("DEMO_", environ or {}).add_flags(parser, FLAGS)
    return parser, parser.parse_args(list(argv))


def test_the_variable_sets_the_default_and_the_flag_wins():
    assert parse()[1].max_buffer == 1024
    assert parse(environ={"DEMO_MAX_BUFFER": "2048"})[1].max_buffer == 2048
    assert parse(["--max-buffer", "4096"], environ={"DEMO_MAX_BUFFER": "2048"})[1].max_buffer == 4096
    assert parse()[1].token is None and parse(environ={"DEMO_TOKEN": ""})[1].token is None


def test_a_bad_variable_is_refused_like_a_bad_flag(capsys):
    with pytest.raises(SystemExit):
        parse(environ={"DEMO_MAX_BUFFER": "lots"})
    assert "--max-buffer" in capsys.readouterr().err


def test_a_refusal_is_one_line_naming_the_variable_its_value_came_from(capsys):
    """Not argparse's usage first, and the variable an operator's unit file sets, not only
    the flag it does not; a typed value's refusal names no variable, even when one is set."""
    parser = Parser(prog="demo")
    Environment("DEMO_", {"DEMO_MAX_BUFFER": "lots"}).add_flags(parser, FLAGS)
    for argv, error in (([], "argument --max-buffer: invalid int value: 'lots' (from DEMO_MAX_BUFFER)"),
                        (["--max-buffer", "a\nlot"], "argument --max-buffer: invalid int value: 'a\\nlot'")):
        with pytest.raises(SystemExit) as exit:
            parser.parse_args(argv)
        assert exit.value.code == 2
        assert capsys.readouterr().err == "demo: error: %s\n" % error


@pytest.mark.parametrize("argv", [["--tokn", "s3cret"], ["--tokn=s3cret"], ["--tok=s3cret"], ["--to", "s3cret"]])
def test_a_flag_it_does_not_know_is_named_without_its_value(argv, capsys):
    """A mistyped flag's value may be a token: argparse quoted it, and took an abbreviation
    of a flag for the flag (which a flag added later would make mean another, or ambiguous)."""
    parser = Parser(prog="demo")
    Environment("DEMO_", {}).add_flags(parser, FLAGS)
    with pytest.raises(SystemExit):
        parser.parse_args(argv)
    error = capsys.readouterr().err
    assert error.startswith("demo: error: no such flag: --to") and error.count("\n") == 1 and "s3cret" not in error


def test_a_variable_no_flag_reads_is_refused_as_a_misspelling():
    """Its setting would not be in force, and nothing would say so."""
    assert Environment("DEMO_", {"DEMO_MAX_BUFFER": "1", "OTHER_MAX_BUFER": "1"}).misread(FLAGS) is None
    assert Environment("DEMO_", {"DEMO_MAX_BUFER": "1"}).misread(FLAGS) == (
        "DEMO_MAX_BUFER is no variable of this program; did you mean DEMO_MAX_BUFFER?")


def test_a_variable_far_from_every_flag_s_is_another_program_s():
    """Celery reads BROKER_URL: a broker started in its environment starts."""
    assert Environment("DEMO_", {"DEMO_URL": "amqp://", "DEMO_MAX_BUFFER": "1"}).misread(FLAGS) is None


@pytest.mark.parametrize("value", ["ture", "2", "enabled"])
def test_a_switch_that_says_neither_on_nor_off_is_refused(value):
    """It left the switch off, unsaid."""
    for said in ("1", " Yes", "off", "0", ""):
        assert Environment("DEMO_", {"DEMO_QUIET": said}).misread(FLAGS) is None
    assert Environment("DEMO_", {"DEMO_QUIET": value}).misread(FLAGS) == (
        "DEMO_QUIET is a switch: on is 1, true, yes, on; off is 0, false, no, off or nothing")


def test_switches_follow_their_variable():
    args = parse()[1]
    assert (args.quiet, args.echo) == (False, True)
    args = parse(environ={"DEMO_QUIET": "yes", "DEMO_NO_ECHO": "1"})[1]
    assert (args.quiet, args.echo) == (True, False)
    args = parse(["--quiet", "--no-echo"])[1]
    assert (args.quiet, args.echo) == (True, False)


def test_a_secret_from_the_environment_never_shows_in_help():
    parser, args = parse(environ={"DEMO_TOKEN": "s3cret"})
    assert args.token == "s3cret"
    assert "s3cret" not in parser.format_help()


def test_help_names_the_variable_and_the_default():
    text = " ".join(parse()[0].format_help().split())
    assert "unsent bytes allowed [DEMO_MAX_BUFFER, default 1024]" in text
    assert "a secret [DEMO_TOKEN]" in text
    assert "say less [DEMO_QUIET=1]" in text


def test_a_file_error_is_told_in_the_systems_words_or_the_tls_librarys():
    import ssl
    from broker.flags import file_error
    try:
        open("/nonexistent/broker.pem")
    except OSError as error:
        assert file_error(error) == "No such file or directory"
    assert file_error(ssl.SSLError(116, "[X509: KEY_VALUES_MISMATCH] key values mismatch")) == \
        "[X509: KEY_VALUES_MISMATCH] key values mismatch"


def test_a_former_name_sets_the_flag_hidden_from_help_and_says_it_is_deprecated(capsys):
    parser, args = parse(["--warm-up", "5"])
    assert args.warm_up == 5
    assert capsys.readouterr().err == (
        "warning: --warm-up is deprecated, use --warm-up-sessions (the former name works until 2.0)\n")
    text = " ".join(parser.format_help().split())
    assert "--warm-up SESSIONS" not in text and "(formerly --warm-up: deprecated) [DEMO_WARM_UP_SESSIONS" in text
    assert parse(["--warm-up-sessions", "6"])[1].warm_up == 6 and capsys.readouterr().err == ""


def test_a_former_variable_sets_the_flag_unless_the_new_one_is_set(capsys):
    assert parse(environ={"DEMO_WARM_UP": "7"})[1].warm_up == 7
    assert capsys.readouterr().err == (
        "warning: DEMO_WARM_UP is deprecated, use DEMO_WARM_UP_SESSIONS (the former name works until 2.0)\n")
    assert parse(environ={"DEMO_WARM_UP": "7", "DEMO_WARM_UP_SESSIONS": "8"})[1].warm_up == 8
    assert capsys.readouterr().err == ""
    assert Environment("DEMO_", {"DEMO_WARM_UP": "7"}).misread(FLAGS) is None
