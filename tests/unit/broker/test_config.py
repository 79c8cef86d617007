"""The broker's command line: its version, from the package."""

import pytest

from broker import config
import broker


def test_version_is_the_packages(capsys):
    with pytest.raises(SystemExit) as exit:
        config.parse_args(["--version"])
    assert exit.value.code == 0
    assert capsys.readouterr().out == "sockjs-broker %s\n" % broker.__version__
