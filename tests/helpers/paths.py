"""Where the test data lives: the repository, the tests and their fixture trees."""

from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
REPO = TESTS.parent
FIXTURES = TESTS / "fixtures"
SYSFS = FIXTURES / "sysfs"
ETHTOOL = FIXTURES / "ethtool"
GOLDEN = TESTS / "golden"
PROMETHEUS = "/usr/bin/prometheus"  # Debian's prometheus package (promtool comes with it)
