"""The shipped browser client's example, as the README and the getting-started page write it,
receives what a backend publishes."""

import pytest

import doc_blocks

EXAMPLE_ORIGIN = "http://127.0.0.1:8080"
ANCHOR = EXAMPLE_ORIGIN + "/static/broker-client.js"
PAGES = {"README.rst": doc_blocks.README, "getting-started": doc_blocks.page("getting-started")}


def client_example(path):
    """The first literal block of the file at ``path`` that loads broker-client.js."""
    return doc_blocks.block_holding(path, '<script src="%s"></script>' % ANCHOR)


@pytest.mark.parametrize("where", sorted(PAGES))
def test_the_client_example_works_as_written(start_broker, browser_script, where):
    example = client_example(PAGES[where])
    assert "new BrokerClient(" in example and example.count(EXAMPLE_ORIGIN) == 3, example
    broker = start_broker("--publish-token", "t")
    result = browser_script("readme_example.js", broker.origin, "t", example.replace(EXAMPLE_ORIGIN, broker.origin))
    assert any(line.startswith("log: received from a backend") for line in result["console"]), result


def test_the_readme_and_the_getting_started_page_give_the_same_example():
    assert client_example(PAGES["README.rst"]) == client_example(PAGES["getting-started"])
