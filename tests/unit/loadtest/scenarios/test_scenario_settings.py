"""Each command reads its parsed arguments once into typed settings; what it refuses still exits 2 with
argparse's one line, before anything runs or any results file is made."""

import dataclasses

import pytest

from loadtest import affinity, arguments, command_line
from loadtest.client import churn
from loadtest.contenders import placement
from loadtest.scenarios import abuse, compare, feed, rolling, selftest, soak, storm

SETTINGS = [("feed", feed.FeedSettings), ("storm", storm.StormSettings), ("rolling", rolling.RollingSettings),
            ("compare", compare.CompareSettings), ("soak", soak.SoakSettings), ("abuse", abuse.AbuseSettings),
            ("selftest", selftest.SelftestSettings)]


def parsed(argv):
    args = command_line.build_parser().parse_args(argv)
    args.command_line = ["python", "-m", "loadtest"] + argv
    return args


@pytest.mark.parametrize("command, settings", SETTINGS)
def test_every_command_s_settings_are_one_frozen_value_of_tuples(command, settings):
    read = settings.of(parsed([command]))
    hash(read)  # a list inside would refuse
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(read, dataclasses.fields(read)[0].name, None)


def test_a_mix_is_compare_s_one_transport_and_the_arguments_stay_as_parsed():
    args = parsed(["compare", "--mix", "websocket=70,xhr-polling=30", "--procs", "4", "--broker-flags", "--warm-up-sessions 9"])
    settings = compare.CompareSettings.of(args)
    assert settings.transports == ("mix:websocket=70,xhr-polling=30",)
    assert args.transport == ["websocket"]
    assert settings.broker_flags == ("--warm-up-sessions", "9")
    assert settings.placement == placement.Placement((args.server_cpu,), (args.client_cpu,), 4)
    assert settings.command == ("python", "-m", "loadtest", "compare", "--mix", "websocket=70,xhr-polling=30",
                                "--procs", "4", "--broker-flags", "--warm-up-sessions 9")


def test_a_soak_churns_only_when_asked():
    assert soak.SoakSettings.of(parsed(["soak"])).waves is None
    assert soak.SoakSettings.of(parsed(["soak", "--churn", "--churn-size", "7", "--expiry", "3"])).waves == \
        churn.Waves(waves=5, size=7, hold=2.0, expiry=3.0)


def test_a_broker_run_s_servers_cpus_and_results_file_are_read_once():
    args = parsed(["feed", "--servers", "broker-cpython,cluster-pypy", "--brokers", "3", "--server-cpus", "0,2",
                   "--client-cpus", "1,3", "--procs", "2", "--out", "r.jsonl"])
    assert arguments.broker_runs(args) == placement.BrokerRuns(
        ("broker-cpython", "cluster-pypy"), 3, placement.Placement((0, 2), (1, 3), 2), "r.jsonl",
        tuple(args.command_line))


def test_a_rolling_run_s_variants_carry_its_broker_flags_and_each_drain():
    argv = ["rolling", "--haproxy", "2", "--broker-flags", "--max-accept-rate 300", "--drain-seconds", "10,0"]
    settings = rolling.RollingSettings.of(parsed(argv))
    assert rolling.RollingRun.variants(settings) == [
        ["--client-address-header", "X-Forwarded-For", "--max-accept-rate", "300", "--drain-seconds", "10"],
        ["--client-address-header", "X-Forwarded-For", "--max-accept-rate", "300", "--drain-seconds", "0"]]
    assert rolling.RollingRun.variants(dataclasses.replace(settings, haproxy=0, broker_flags=())) == [
        ["--drain-seconds", "10"], ["--drain-seconds", "0"]]


@pytest.mark.parametrize("argv, brokers, refusal", [
    ([], 3, None),
    (["--transport", "raw"], 3, "--transport raw: the raw websocket carries no positions, and a client resumes"),
    ([], 1, "--brokers 1: a restart sends a broker's clients to another, so 2 or more"),
    (["--fail", "redis-primary"], 3, "--fail redis-primary: a failover needs --redis sentinels"),
    (["--signal", "KILL"], 3, "--signal KILL: a killed broker drains nothing, so --drain-seconds 0"),
    (["--signal", "KILL", "--drain-seconds", "0"], 3, None),
])
def test_a_rolling_run_refuses_what_it_cannot_restart(argv, brokers, refusal):
    assert rolling.refusal(rolling.RollingSettings.of(parsed(["rolling"] + argv)), brokers) == refusal


def _other_cpu():
    """A CPU number this process may not run on."""
    return max(affinity.allowed_cpus()) + 1


def _one_cpu():
    """A CPU number this process may run on."""
    return str(min(affinity.allowed_cpus()))


@pytest.mark.parametrize("argv, message", [
    (["rolling", "--brokers", "1"], "--brokers 1: a restart sends a broker's clients to another, so 2 or more"),
    (["compare", "--server-cpu", str(_other_cpu())], "--server-cpu %d: this process may run on CPUs" % _other_cpu()),
    (["soak", "--client-cpu", str(_other_cpu())], "--client-cpu %d: this process may run on CPUs" % _other_cpu()),
    (["abuse", "--server-cpu", _one_cpu(), "--client-cpu", _one_cpu()], "--server-cpu and --client-cpu must differ"),
    (["compare", "--server-cpu", _one_cpu(), "--client-cpu", _one_cpu()], "--server-cpu and --client-cpu must differ"),
])
def test_refusals_still_come_out_as_argparse_errors(argv, message, capsys, tmp_path):
    out = ["--out", str(tmp_path / "r.jsonl")] if argv[0] != "abuse" else []
    with pytest.raises(SystemExit) as exit:
        command_line.main(argv + out)
    assert exit.value.code == 2
    error = capsys.readouterr().err
    assert message in error and error.splitlines()[-1].startswith("python -m loadtest %s: error: " % argv[0])
    assert not (tmp_path / "r.jsonl").exists()
