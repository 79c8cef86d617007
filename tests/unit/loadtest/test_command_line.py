"""One command line: a subcommand per scenario, the latency sweep without one, LOADTEST_* variables."""

import pytest

from loadtest import command_line


def test_help_lists_every_command_and_the_variables(capsys):
    with pytest.raises(SystemExit) as exit:
        command_line.main(["--help"])
    assert exit.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for name in command_line.COMMANDS:
        assert name in text
    assert "LOADTEST_CLIENT_CPU" in text


def test_without_a_command_the_arguments_are_the_latency_sweeps():
    args = command_line.build_parser().parse_args(["latency", "--clients", "5"])
    assert (args.command, args.clients) == ("latency", 5)
    with pytest.raises(SystemExit) as exit:
        command_line.main(["--clients", "0"])
    assert exit.value.code == 2


def test_a_command_s_help_names_each_option_s_variable(capsys):
    with pytest.raises(SystemExit):
        command_line.main(["soak", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "[LOADTEST_WARM_UP_SECONDS" in text and "[LOADTEST_SERVER_CPU" in text and "[LOADTEST_CHURN=1]" in text


def test_a_variable_sets_an_option_and_a_bad_one_is_refused_like_a_flag(monkeypatch, capsys):
    monkeypatch.setenv("LOADTEST_CHURN_SIZE", "7")
    monkeypatch.setenv("LOADTEST_CHURN", "1")
    args = command_line.build_parser().parse_args(["soak"])
    assert (args.churn_size, args.churn) == (7, True)
    assert command_line.build_parser().parse_args(["soak", "--churn-size", "9"]).churn_size == 9
    monkeypatch.setenv("LOADTEST_CHURN_SIZE", "0")
    with pytest.raises(SystemExit) as exit:
        command_line.build_parser().parse_args(["soak"])
    assert exit.value.code == 2
    assert "argument --churn-size: must be 1 or more" in capsys.readouterr().err


@pytest.mark.parametrize("argv, dest, new", [
    (["soak", "--warmup", "3"], "warmup", "--warm-up-seconds"),
    (["soak", "--warm-up", "3"], "warmup", "--warm-up-seconds"),
    (["compare", "--warm-up", "3"], "warm_up", "--warm-up-seconds"),
    (["latency", "--duration", "3"], "duration", "--step-seconds"),
])
def test_a_former_name_still_works_and_says_the_new_one(argv, dest, new, capsys):
    parser = command_line.build_parser()
    assert getattr(parser.parse_args(argv), dest) == 3 == getattr(parser.parse_args([argv[0], new, "3"]), dest)
    assert capsys.readouterr().err == "warning: %s is deprecated, use %s (the former name works until 2.0)\n" % (
        argv[1], new)


def test_the_former_warm_up_variable_sets_the_seconds_unless_the_new_one_is_set(monkeypatch, capsys):
    monkeypatch.setenv("LOADTEST_WARM_UP", "7")
    assert command_line.build_parser().parse_args(["compare"]).warm_up == 7
    assert "LOADTEST_WARM_UP is deprecated, use LOADTEST_WARM_UP_SECONDS" in capsys.readouterr().err
    monkeypatch.setenv("LOADTEST_WARM_UP_SECONDS", "9")
    assert command_line.build_parser().parse_args(["soak"]).warmup == 9
    assert capsys.readouterr().err == ""
