"""``python -m loadtest rooms`` reads its options once into typed settings and refuses what cannot run."""

import dataclasses
import time

import jwt
import pytest

from broker import config
from loadtest import command_line
from loadtest.method import skew
from loadtest.scenarios import many_rooms


def parsed(argv):
    args = command_line.build_parser().parse_args(argv)
    args.command_line = ["python", "-m", "loadtest"] + argv
    return args


def test_the_settings_are_one_frozen_value_and_the_command_is_rooms():
    settings = many_rooms.ManyRoomsSettings.of(parsed(["rooms", "--rooms", "1,10,100", "--viewers", "50",
                                                       "--rooms-per-viewer", "5", "--skew", "hot:0.5",
                                                       "--room-rate", "2", "--idle-rooms", "0"]))
    hash(settings)
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.viewers = 1
    assert settings == many_rooms.ManyRoomsSettings(rooms=(1, 10, 100), viewers=50, rooms_per_viewer=5,
                                                    skew=skew.Skew("hot", 0.5), room_rate=2.0, duration=10.0,
                                                    idle_rooms=0, transport="websocket", publish_at="each")
    assert command_line.COMMANDS["rooms"] is many_rooms


def test_each_number_of_rooms_runs_on_its_own_broker_sized_for_it_and_the_idle_rooms():
    settings = many_rooms.ManyRoomsSettings.of(parsed(["rooms", "--rooms", "10,1000", "--idle-rooms", "500",
                                                       "--rooms-per-viewer", "3"]))
    assert many_rooms.ManyRoomsRun.variants(settings) == [
        ("--max-rooms", "510", "--max-session-rooms", "3"), ("--max-rooms", "1500", "--max-session-rooms", "3")]


def test_private_rooms_start_each_broker_with_a_secret_of_the_run_s_own_never_shown():
    first, second = (many_rooms.ManyRoomsSettings.of(parsed(["rooms", "--rooms", "10", "--idle-rooms", "5",
                                                               "--private"])) for _ in range(2))
    assert first.private and len(first.token_secret) == 43 and first.token_secret != second.token_secret
    assert first.token_secret not in repr(first)
    assert many_rooms.ManyRoomsRun.variants(first) == [
        ("--max-rooms", "15", "--max-session-rooms", "1", "--private-rooms", "room-*")]
    assert many_rooms.ManyRoomsRun.secret_flags(first) == ("--token-secret=" + first.token_secret,)
    public = many_rooms.ManyRoomsSettings.of(parsed(["rooms"]))
    assert (public.private, public.token_secret, many_rooms.ManyRoomsRun.secret_flags(public)) == (False, None, ())
    assert public.viewer_tokens(((0,),), time.time()) is None


def test_a_broker_reads_a_secret_that_begins_with_a_dash_as_the_secret(monkeypatch):
    monkeypatch.setattr(many_rooms.secrets, "token_urlsafe", lambda size: "-" + "s" * 42)
    settings = many_rooms.ManyRoomsSettings.of(parsed(["rooms", "--private"]))
    argv = list(many_rooms.ManyRoomsRun.secret_flags(settings) + settings.broker_flags(100))
    assert config.parse_args(argv, environ={}).token_secret == "-" + "s" * 42


def test_each_private_viewer_s_token_names_exactly_its_rooms_for_an_hour():
    settings = many_rooms.ManyRoomsSettings.of(parsed(["rooms", "--private", "--rooms-per-viewer", "2"]))
    now = time.time()
    tokens = settings.viewer_tokens(((0, 3), (5, 1)), now)
    claims = [jwt.decode(token, settings.token_secret, algorithms=["HS256"]) for token in tokens]
    assert claims == [{"sub": "viewer-0", "exp": int(now) + 3600, "rooms": ["room-0", "room-3"]},
                      {"sub": "viewer-1", "exp": int(now) + 3600, "rooms": ["room-5", "room-1"]}]
    assert jwt.get_unverified_header(tokens[0])["alg"] == "HS256"


def test_a_cluster_publishes_through_each_broker_unless_told_the_first_only():
    assert many_rooms.ManyRoomsSettings.of(parsed(["rooms"])).publish_at == "each"
    assert many_rooms.ManyRoomsSettings.of(parsed(["rooms", "--publish-at", "first"])).publish_at == "first"


@pytest.mark.parametrize("argv, refusal", [
    (["--transport", "raw"], "--transport raw"),
    (["--rooms", "10,4", "--rooms-per-viewer", "5"], "more than the 4 rooms"),
])
def test_what_cannot_run_is_refused_before_anything_starts(argv, refusal):
    assert refusal in many_rooms.ManyRoomsSettings.of(parsed(["rooms"] + argv)).refusal()


def test_a_bad_skew_exits_2_with_the_rule(capsys):
    with pytest.raises(SystemExit) as exit:
        parsed(["rooms", "--skew", "zipf:0"])
    assert exit.value.code == 2 and "uniform, zipf:S" in capsys.readouterr().err
