import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

# shared helpers: `from netns import ...`
sys.path.insert(0, str(Path(__file__).parent / "helpers"))

import nicwatch.consumers.registry  # registers the configuration sections consumers own
import nicwatch.sources

from faults import NON_UTF8, PAIRS
from netns import make_veth_pair, namespace_with, sh

FIXTURES = Path(__file__).parent / "fixtures"
# Every part a source puts in a test is checked against its Part's type as well (the
# daemon checks only that it is a part): a double or a source of the wrong type fails the test.
nicwatch.sources.check_types(True)


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


def pytest_report_header(config):
    """The kernel the lab (tests/lab) boots, resolved from the package lists."""
    sys.path.insert(0, str(Path(__file__).parent / "lab"))
    import build
    try:
        kernel = build.resolve_kernel(build.kernel_spec())
    except Exception as e:  # no apt, no lists: the lab tests say so when they skip
        return [f"nicwatch lab: kernel unavailable ({e})"]
    return [f"nicwatch lab: kernel {kernel.image.name} {kernel.version} "
            f"(${build.ENV_KERNEL} picks another)"]


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true",
                     help="rewrite tests/golden/*.prom from the current output")


@pytest.fixture
def fault_ns():
    """A namespace with PAIRS veth pairs (both ends inside, 4 queues, up) and a pair whose
    one end has a name that is not UTF-8."""
    batch = "".join(f"link add nf{i}a numtxqueues 4 numrxqueues 4 type veth peer name nf{i}b "
                    f"numtxqueues 4 numrxqueues 4\nlink set nf{i}a up\nlink set nf{i}b up\n"
                    for i in range(PAIRS))
    with namespace_with("nwf", batch) as ns:
        subprocess.run([b"ip", b"-n", ns.encode(), b"link", b"add", NON_UTF8, b"type", b"veth",
                        b"peer", b"name", b"nf9b"], check=True, capture_output=True)
        sh("ip", "-n", ns, "link", "set", "lo", "up")
        yield ns


@pytest.fixture
def reachable_dir():
    """A root-owned directory (mode 0755) the unprivileged user can enter but not write.
    (pytest's tmp_path is not: its parents are private to root.)"""
    path = Path(tempfile.mkdtemp(prefix="nicwatch-test-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)
