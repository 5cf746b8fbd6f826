import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from netns import make_veth_pair  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def veth_pair():
    pair = make_veth_pair()
    yield pair
    pair.delete()


@pytest.fixture
def veth_pair_mq():
    """A veth pair with 8 rx/tx queues, for stat-set changes with `ethtool -L`."""
    pair = make_veth_pair(queues=8, subnet=1)
    yield pair
    pair.delete()


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true",
                     help="rewrite tests/golden/*.prom from the current output")
