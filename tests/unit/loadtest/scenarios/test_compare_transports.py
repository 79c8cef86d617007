"""``compare --transport`` names one transport or several, ``--mix`` one audience of several by weight;
refused before anything runs when they cannot be."""

import pytest

from loadtest import command_line
from loadtest.framing import endpoints


def parsed(argv):
    parser = command_line.build_parser()
    return parser.parse_args(["compare"] + argv)


@pytest.mark.parametrize("text, transports", [
    ("xhr-polling", ["xhr-polling"]),
    ("websocket,xhr-streaming,eventsource,htmlfile,xhr-polling,jsonp-polling",
     ["websocket", "xhr-streaming", "eventsource", "htmlfile", "xhr-polling", "jsonp-polling"]),
    ("sockjs,websocket", ["websocket"]),
])
def test_one_transport_or_several(text, transports):
    assert parsed(["--transport", text]).transport == transports


def test_the_default_is_the_websocket_or_the_variable(monkeypatch):
    assert parsed([]).transport == [endpoints.WEBSOCKET]
    monkeypatch.setenv("LOADTEST_TRANSPORT", "eventsource")
    assert parsed([]).transport == ["eventsource"]


def test_an_unknown_transport_is_refused(capsys):
    with pytest.raises(SystemExit) as exit:
        command_line.main(["compare", "--measure", "cpu", "--transport", "websocket,carrier-pigeon"])
    assert exit.value.code == 2
    assert "unknown transport carrier-pigeon" in capsys.readouterr().err


def test_a_mix_is_one_audience_by_weight():
    assert parsed(["--mix", "websocket=70,xhr-streaming=20,xhr-polling=10"]).mix == \
        "mix:websocket=70,xhr-streaming=20,xhr-polling=10"


def test_a_mix_of_an_unknown_transport_or_without_weights_is_refused(capsys):
    for mix, said in (("websocket=70,carrier-pigeon=30", "'carrier-pigeon' is no transport"),
                      ("websocket,xhr-polling", "the weight of websocket must be a whole number above 0")):
        with pytest.raises(SystemExit) as exit:
            command_line.main(["compare", "--measure", "cpu", "--mix", mix])
        assert exit.value.code == 2
        assert said in capsys.readouterr().err
