"""The README's example of the shipped browser client, as written, receives what a backend publishes."""

import os

from checkout import ROOT

README_ORIGIN = "http://127.0.0.1:8080"


def readme_example():
    """The literal block of README.rst that loads broker-client.js, unindented."""
    with open(os.path.join(ROOT, "README.rst")) as f:
        lines = f.read().splitlines()
    start = next(i for i, line in enumerate(lines) if "/static/broker-client.js" in line)
    while lines[start - 1].startswith("    "):
        start -= 1
    end = start
    while end < len(lines) and (lines[end].startswith("    ") or not lines[end].strip()):
        end += 1
    return "\n".join(line[4:] for line in lines[start:end])


def test_the_readme_client_example_works_as_written(start_broker, browser_script):
    example = readme_example()
    assert "new BrokerClient(" in example and example.count(README_ORIGIN) == 3, example
    broker = start_broker("--publish-token", "t")
    result = browser_script("readme_example.js", broker.origin, "t", example.replace(README_ORIGIN, broker.origin))
    assert any(line.startswith("log: received from a backend") for line in result["console"]), result
