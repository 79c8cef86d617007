"""``python -m loadtest`` refuses what it cannot measure, before it starts."""

import pytest

from loadtest import command_line


@pytest.mark.parametrize("argv, message", [
    (["--clients", "0"], "argument --clients: must be 1 or more, got 0"),
    (["--levels", "25,0"], "argument --levels: must be 1 or more, got 0"),
    (["--procs", "0"], "argument --procs: must be 1 or more, got 0"),
    (["--duration", "0"], "argument --step-seconds/--duration: must be a number more than 0, got 0"),
    (["--rate", "-5"], "argument --rate: must be a number more than 0, got -5"),
    (["--step-seconds", "inf"], "argument --step-seconds/--duration: must be a number more than 0, got inf"),
])
def test_counts_and_durations_must_be_positive(argv, message, capsys, tmp_path):
    with pytest.raises(SystemExit) as exit:
        command_line.main(argv + ["--out", str(tmp_path / "r.jsonl")])
    assert exit.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "r.jsonl").exists()
