"""What a first-time user sees on a terminal: `show` fits the terminal, every command pipes
into `head` quietly, and usage errors are one line with exit status 2 before anything
connects or reads."""

from __future__ import annotations

import os
import subprocess

import pytest

from hostd import NICWATCH
from netns import ns_sh, sh
from paths import ETHTOOL, FIXTURES, SYSFS

HEADERS = ("DRIVER", "PCI", "STATE", "SPEED", "MTU", "RING RX/TX (MAX)", "CHANNELS",
           "RX BYTES", "TX BYTES", "PAUSE RX/TX", "PFC RX/TX", "DROPS RX/TX", "ERRORS RX/TX",
           "OUT-OF-BUF", "DISCARDS", "CRC", "FEC UNCORR", "HEALTH", "DIAGNOSIS")


def show(columns: int | None, *flags: str, ns: str | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns:
        env["COLUMNS"] = str(columns)
    argv = [NICWATCH, "show", "--collector.ethtool-netlink=false", *flags]
    if ns:
        argv = ["ip", "netns", "exec", ns, *argv]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    return r.stdout


def says_everything(out: str) -> bool:
    """Every column's name appears (as a table header or a narrow-layout label)."""
    low = out.lower()
    return all(h.lower() in low for h in HEADERS)


@pytest.mark.parametrize("tree, devices", [
    ("lab-report-cx6-200g", ["enp129s0np0"]),
    ("cx6-dual-gen4x8-width", ["ens1f0np0", "ens1f1np1"]),
    ("cx7-gen5-healthy", ["eth2"]),
    ("virtio-no-pcie", ["eth0"]),
])
@pytest.mark.parametrize("columns", [80, 200])
def test_show_fits_the_terminal_on_fixture_trees(tree, devices, columns):
    out = show(columns, f"--path.sysfs={SYSFS / tree}")
    lines = out.splitlines()
    assert max(map(len, lines)) <= columns, out
    assert says_everything(out)
    for dev in devices:
        assert any(line.startswith(dev) for line in lines), out
    mtu = (SYSFS / tree / "class" / "net" / devices[0] / "mtu").read_text().strip()
    assert f" {mtu} " in f"{out} ".replace("\n", " ")  # exact: 9000, never 9.0k
    assert "9.0k" not in out and "1.5k" not in out
    if "gen4x8" in tree or "lab-report" in tree:
        assert "DEGRADED" in out and "16GT/s x8" in out


def test_show_at_220_columns_is_a_table_and_in_a_pipe_is_never_cut():
    # 215 characters since the DIAGNOSIS column: 220 holds the table
    tree = f"--path.sysfs={SYSFS / 'lab-report-cx6-200g'}"
    wide = show(220, tree)
    assert wide.splitlines()[0].split() == ["DEVICE", *" ".join(HEADERS).split()]
    piped = show(None, tree)  # no terminal, no COLUMNS: nothing to fit
    assert piped == wide
    narrow = show(80, tree)
    assert narrow != wide and not narrow.startswith("DEVICE")


@pytest.fixture
def veth_mq():
    from netns import make_veth_pair
    pair = make_veth_pair(queues=4, subnet=7)
    sh("ip", "-n", pair.ns_a, "link", "set", pair.a, "mtu", "9000")
    ns_sh(pair.ns_a, "ethtool", "-L", pair.a, "rx", "3", "tx", "2")
    yield pair
    pair.delete()


@pytest.mark.parametrize("columns", [80, 200])
def test_show_on_a_veth_prints_exact_mtu_and_rx_tx_channels(veth_mq, columns):
    out = show(columns, f"--interfaces.include={veth_mq.a}", "--collector.ethtool-netlink=true",
               ns=veth_mq.ns_a)
    assert max(map(len, out.splitlines())) <= columns, out
    assert "rx3/tx2" in out and " 9000 " in out.replace("\n", " ") + " "
    assert says_everything(out)


# -- pipes -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def snapshots(tmp_path_factory):
    """Two snapshots of a fixture tree, taken by `nicwatch snapshot`."""
    d = tmp_path_factory.mktemp("snaps")
    for name in ("a.json", "b.json"):
        subprocess.run([NICWATCH, "snapshot", "-o", str(d / name),
                        f"--path.sysfs={SYSFS / 'cx6-dual-gen4x8-width'}"],
                       check=True, capture_output=True, timeout=60)
    return d


def _commands(snapshots) -> list[list[str]]:
    tree = f"--path.sysfs={SYSFS / 'cx6-dual-gen4x8-width'}"
    dump = str(ETHTOOL / "mlx5_core.txt")
    return [
        ["normalize", dump, "--driver=mlx5_core"],
        ["normalize", dump, "--driver=mlx5_core", "--table"],
        ["module", "decode", str(FIXTURES / "module" / "osfp-800g-dr8-juniper.txt")],
        ["module", "decode", str(FIXTURES / "module" / "osfp-800g-dr8-juniper.txt"), "--table"],
        ["diff", "--json", str(snapshots / "a.json"), str(snapshots / "b.json")],
        ["diff", str(snapshots / "a.json"), str(snapshots / "b.json")],
        ["show", tree], ["show", "--json", tree],
        ["snapshot", "-o", "-", tree],
        ["deploy", "kubernetes"], ["deploy", "dashboards", "nicwatch-host.json"],
        ["--help"], ["show", "--help"],
    ]


def test_every_command_piped_into_head_is_quiet(snapshots):
    """A real shell pipe: `nicwatch ... | head -1` prints its line and nothing on stderr."""
    for argv in _commands(snapshots):
        cmd = " ".join([NICWATCH, *(f"'{a}'" for a in argv)])
        r = subprocess.run(["bash", "-c", f"set -o pipefail; {cmd} | head -1"],
                           capture_output=True, text=True, timeout=60)
        # a fixture tree is not this host's network namespace: show says so (sources.netns)
        stderr = "".join(line for line in r.stderr.splitlines(keepends=True)
                         if not line.startswith("nicwatch show: warning: --path.sysfs "))
        assert stderr == "", (argv, r.stderr)
        assert r.stdout.count("\n") == 1 and r.returncode in (0, 141), (argv, r)


def test_a_reader_that_is_gone_ends_the_command_with_141(snapshots):
    """The reader closes the pipe before nicwatch writes (what `head` does to long output):
    no BrokenPipeError traceback, exit status 141 like a tool killed by SIGPIPE."""
    for argv in _commands(snapshots):
        p = subprocess.Popen([NICWATCH, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        p.stdout.close()
        err = p.stderr.read()
        status = p.wait(timeout=60)
        assert err == b"", (argv, err)
        # argparse's help output swallows the error itself and exits 0
        assert status == (0 if "--help" in argv else 141), argv


# -- usage errors ------------------------------------------------------------------------------

@pytest.mark.parametrize("argv, needle", [
    (["history", "--since", "10q", "--web.url", "http://127.0.0.1:1"], "'10q'"),
    (["history", "--since", "1.5d"], "'1.5d'"),
    (["history", "--web.url", "ftp://x"], "--web.url"),
    (["serve", "--interval", "1.5d"], "--interval"),
    (["demo", "--ports", "100"], "--ports"),
    (["normalize", "/nonexistent"], "/nonexistent"),
    (["module", "decode", "/nonexistent"], "/nonexistent"),
    (["diff", "/nonexistent"], "/nonexistent"),
    (["show", "--path.sysfs", "/nonexistent"], "/nonexistent"),
    (["snapshot", "-o", "/nonexistent/s.json"], "/nonexistent"),
    (["history", "-o", "/nonexistent/h.json", "--web.url", "http://127.0.0.1:1"],
     "/nonexistent"),
])
def test_usage_errors_are_one_line_exit_2_before_any_connection(argv, needle):
    r = subprocess.run([NICWATCH, *argv], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r
    assert r.stderr.count("\n") == 1 and needle in r.stderr and "Traceback" not in r.stderr
    assert "refused" not in r.stderr and "cannot reach" not in r.stderr


def test_normalize_with_the_wrong_driver_says_so_and_fails():
    r = subprocess.run([NICWATCH, "normalize", str(ETHTOOL / "mlx5_core.txt"), "--driver=ena"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.count("\n") == 1
    assert "'ena'" in r.stderr and "best matching tables: mlx5_core" in r.stderr
    ok = subprocess.run([NICWATCH, "normalize", str(ETHTOOL / "veth.txt"), "--driver=veth"],
                        capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and ok.stderr == ""  # veth maps nothing canonical by design


def test_demo_help_agrees_with_itself():
    out = subprocess.run([NICWATCH, "demo", "--help"], capture_output=True, text=True,
                         timeout=60).stdout
    flat = " ".join(out.split())
    assert "default 127.0.0.1:" in flat and "default :" not in flat
