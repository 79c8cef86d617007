"""The demo page as a newcomer uses it, and the assets the broker serves for it."""

import json
import os
import shutil
import sys
import urllib.request

from broker.ops import demo_page
from loadtest.contenders.child_process import launch
from checkout import ROOT as CHECKOUT

TOKEN = "demo-token"


def test_demo_page_chats_and_follows_a_counter_added_to_over_http(start_broker, browser_script,
                                                                    tmp_path):
    demo = start_broker("--publish-token", TOKEN, "--replay", "1", "--announce-audience", "1",
                        "--heartbeat-delay", "40")
    for amount in (b"40.5", b"0.50"):
        status, _ = demo.request("POST", "/publish?key=raised&op=add", amount,
                                 {"Authorization": "Bearer " + TOKEN})
        assert status == 200
    status, _ = demo.request("POST", "/publish", json.dumps("a line before").encode(),
                             {"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"})
    assert status == 200
    seen = browser_script("demo.js", demo.origin, TOKEN, str(tmp_path / "demo.png"))
    assert seen["replayed counter"] == "41.00"
    assert seen["forced transport"] == "xhr-streaming"
    assert seen["chat"].endswith(": hello from the demo test")
    assert seen["published counter"] == "42.00"
    assert seen["audience"] == "1 watching"
    # The page's client is told the broker's heartbeat: its silence bound is that plus 10 s.
    assert seen["silence bound"] == 50000
    assert seen["errors"] == []


def test_demo_page_shows_two_campaigns_side_by_side_each_with_its_rooms_total_audience_and_lines(
        start_broker, browser_script, tmp_path):
    demo = start_broker("--publish-token", TOKEN, "--announce-audience", "1")
    for room, amount in (("spring", b"10"), ("autumn", b"2.5")):
        status, answer = demo.request("POST", "/publish?room=%s&key=raised&op=add" % room, amount,
                                      {"Authorization": "Bearer " + TOKEN})
        assert status == 200, answer
    seen = browser_script("campaigns.js", demo.origin, TOKEN, str(tmp_path / "campaigns.png"))
    assert seen["cards"] == [["spring", "autumn"], ["autumn"]]
    assert seen["chat shown"] is False, "a page of two rooms only listens"
    assert seen["totals"] == ["10", "2.5", "2.5"]
    assert seen["audiences"] == ["1 watching", "2 watching", "2 watching"]
    assert seen["spring added to"] == ["15", "2.5", "2.5"]
    assert seen["autumn line"] == 0, "autumn's line in spring's card"
    assert seen["errors"] == []


def test_iframe_page_loads_sockjs_client_from_the_broker(start_broker, sockjs_client):
    running = start_broker()
    status, iframe = running.request("GET", "/broadcast/iframe.html")
    assert status == 200
    assert '<script src="%s"></script>' % demo_page.SOCKJS_URL in iframe
    status, library = running.request("GET", demo_page.SOCKJS_URL)
    assert status == 200
    assert '="1.6.1"' in library


def test_without_sockjs_client_the_broker_warns_and_the_page_says_how_to_fix_it(tmp_path):
    shutil.copytree(os.path.join(CHECKOUT, "broker"), str(tmp_path / "broker"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    server = launch([sys.executable, "-m", "broker", "--host", "127.0.0.1", "--port", "0"],
                    cwd=str(tmp_path))
    try:
        origin = server.url.rsplit("/", 1)[0]
        with urllib.request.urlopen(origin + "/", timeout=5) as response:
            page = response.read().decode()
    finally:
        server.stop()
    assert "sockjs-client is not installed" in server.output
    assert "npm ci" in server.output
    assert "Run <code>npm ci</code>" in page
