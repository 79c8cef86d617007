"""``python -m loadtest`` refuses what it cannot measure, before it starts."""

import pytest

from loadtest import command_line


@pytest.mark.parametrize("argv, message", [
    (["--clients", "0"], "argument --clients: must be 1 or more, got 0"),
    (["--levels", "25,0"], "argument --levels: must be 1 or more, got 0"),
    (["--procs", "0"], "argument --procs: must be 1 or more, got 0"),
    (["--duration", "0"], "argument --duration: must be a number more than 0, got 0"),
    (["--rate", "-5"], "argument --rate: must be a number more than 0, got -5"),
    (["--step-seconds", "inf"], "argument --step-seconds: must be a number more than 0, got inf"),
])
def test_counts_and_durations_must_be_positive(argv, message, capsys, tmp_path):
    with pytest.raises(SystemExit) as exit:
        command_line.main(argv + ["--out", str(tmp_path / "r.jsonl")])
    assert exit.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "r.jsonl").exists()


def test_a_mix_excludes_one_transport(capsys, tmp_path):
    with pytest.raises(SystemExit) as exit:
        command_line.main(["--transport", "raw", "--mix", "websocket=1", "--out", str(tmp_path / "r.jsonl")])
    assert exit.value.code == 2
    assert "argument --mix: not allowed with argument --transport" in capsys.readouterr().err


def test_every_transport_is_offered_and_sockjs_still_means_the_websocket(capsys):
    with pytest.raises(SystemExit):
        command_line.main(["latency", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "{websocket,xhr-streaming,eventsource,htmlfile,xhr-polling,jsonp-polling,raw}" in help_text
    with pytest.raises(SystemExit):
        command_line.main(["--transport", "carrier-pigeon"])
    assert "invalid choice: 'carrier-pigeon'" in capsys.readouterr().err
