import pytest

from loadtest import contenders


@pytest.fixture(scope="session", autouse=True)
def node_modules():
    """sockjs-node's dependencies (``npm ci`` on a clean clone)."""
    contenders.ensure_node_modules()
