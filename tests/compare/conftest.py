import pytest

from loadtest.contenders import registry


@pytest.fixture(scope="session", autouse=True)
def node_modules():
    """sockjs-node's dependencies (``npm ci`` on a clean clone)."""
    registry.ensure_node_modules()
