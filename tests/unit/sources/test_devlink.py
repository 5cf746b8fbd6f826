"""The devlink source: the real kernel path where this machine has it (the family is absent
here: CONFIG_NET_DEVLINK=n, no netdevsim), and the present path against replies built to the
kernel's layout from published `devlink health` outputs (tests/fixtures/devlink). The lab
(tests/lab/test_lab_nsim_devlink.py) runs the same source against a real devlink core and
netdevsim's reporters and ports under QEMU; the doubles remain for the mlx5, ice and
octeontx2 reporters nothing here can run."""

import logging
import time

import pytest
import structlog

from nicwatch.sources import Poll, SourceOptions
from nicwatch.sources import devlink as dl
from nicwatch.sources.netlink import ParseError

from fixture_devlink import (
    DEVLINK,
    IFS,
    MLX5,
    KernelDouble,
    TextReporter,
    kernel_has_devlink,
    netclass,
    nla,
    reporter_message,
)
from paths import FIXTURES

# --- the real kernel -----------------------------------------------------------------------


@pytest.mark.skipif(kernel_has_devlink(), reason="this kernel has the devlink family")
def test_a_kernel_without_devlink_leaves_the_source_out_with_one_log_line():
    """The absent path, for real: the generic netlink controller has no "devlink" family."""
    with pytest.raises(dl.DevlinkUnavailable, match=r"devlink.*ENOENT"):
        dl.DevlinkNetlink()
    saved = structlog.get_config()
    # at debug level whatever an earlier test configured (the line is a debug line)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG))
    try:
        with structlog.testing.capture_logs() as lines:
            assert dl.DevlinkSource.open(SourceOptions()) is None
            assert dl.DevlinkSource.open(SourceOptions()) is None
    finally:
        structlog.configure(**saved)
    assert [e["event"] for e in lines] == ["devlink_unavailable"] * 2  # once per open
    assert "ENOENT" in lines[0]["error"]


@pytest.mark.skipif(not kernel_has_devlink(), reason="this kernel has no devlink family")
def test_the_real_dumps_parse():  # pragma: no cover - on kernels with devlink only
    with dl.DevlinkNetlink() as sock:
        result = sock.read_all()
    assert not result.errors
    assert all(r.state in ("healthy", "error") for r in result.reporters)


def test_a_daemon_without_devlink_has_no_devlink_errors_or_series():
    """Whatever the kernel, the registry's collector never reports devlink per poll when the
    family is absent (absent is not an error)."""
    if kernel_has_devlink():
        pytest.skip("this kernel has the devlink family")
    from nicwatch.sources.registry import open_sources
    sources = open_sources(SourceOptions(sysfs=str(FIXTURES / "sysfs" / "mlx5-rdma")))
    try:
        assert "devlink" not in {s.name for s in sources}
    finally:
        for s in sources:
            s.close()


# --- replies in the kernel's layout --------------------------------------------------------




@pytest.mark.parametrize("pad", [False, True])
def test_mlx5_reporters_decode_with_and_without_u64_padding(pad):
    result = KernelDouble(MLX5, ifindexes=IFS, pad=pad).read_all()
    assert not result.errors
    by = {(r.handle, r.port, r.name): r for r in result.reporters}
    assert len(by) == 10
    tx = by[("pci/0000:08:00.0", 65535, "tx")]
    assert (tx.state, tx.errors, tx.recoveries, tx.grace_period_ms, tx.auto_recover,
            tx.auto_dump) == ("healthy", 3, 3, 500, True, True)
    assert tx.last_dump_time == 1793628451.0  # 2026-11-02 14:07:31 UTC
    fatal = by[("pci/0000:08:00.1", None, "fw_fatal")]
    assert (fatal.state, fatal.errors, fatal.recoveries) == ("error", 1, 0)
    fw = by[("pci/0000:08:00.0", None, "fw")]  # no recover op: the kernel sends no period
    assert (fw.grace_period_ms, fw.auto_recover, fw.auto_dump) == (None, None, True)
    vnic = by[("pci/0000:08:00.0", None, "vnic")]  # diagnose only
    assert (vnic.auto_dump, vnic.last_dump_time) == (None, None)
    ports = {p.index: p for p in result.ports}
    assert ports[65535] == dl.DevlinkPort("pci/0000:08:00.0", 65535, 4, "enp8s0f0np0",
                                          "physical", 0)


def test_published_outputs_decode_to_their_numbers():
    result = KernelDouble(DEVLINK / "ice-e810.txt", DEVLINK / "octeontx2-af.txt").read_all()
    by = {r.name: r for r in result.reporters}
    port = by["port"]
    assert (port.handle, port.port, port.state, port.errors, port.recoveries) == (
        "pci/0000:b1:00.3", None, "error", 1, 0)
    assert time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(port.last_dump_time)) == (
        "2024-03-17 09:29:29")
    assert port.grace_period_ms is None and port.auto_dump is True
    assert by["hw_npa_err"].errors == 2871 and by["hw_npa_err"].grace_period_ms == 0


def test_a_reporter_can_recover_exactly_when_the_kernel_sends_its_recovery_settings():
    """devlink_nl_health_reporter_fill puts GRACEFUL_PERIOD and AUTO_RECOVER only for a
    reporter with ops->recover: mlx5 fw and vnic and every ice reporter have none."""
    result = KernelDouble(MLX5, DEVLINK / "ice-e810.txt").read_all()
    got = {(r.handle, r.name): r.recoverable for r in result.reporters}
    assert got == {
        ("pci/0000:08:00.0", "fw"): False, ("pci/0000:08:00.0", "fw_fatal"): True,
        ("pci/0000:08:00.0", "vnic"): False, ("pci/0000:08:00.0", "tx"): True,
        ("pci/0000:08:00.0", "rx"): True, ("pci/0000:08:00.1", "fw"): False,
        ("pci/0000:08:00.1", "fw_fatal"): True, ("pci/0000:08:00.1", "vnic"): False,
        ("pci/0000:08:00.1", "tx"): True, ("pci/0000:08:00.1", "rx"): True,
        ("pci/0000:b1:00.3", "fw"): False, ("pci/0000:b1:00.3", "port"): False}


def test_vf_representor_ports_tell_switchdev_from_legacy():
    """mlx5 registers a pci_vf devlink port per VF only in switchdev mode: the published
    switchdev `devlink port show` lines give 2, the legacy layout of mlx5-cx6dx.txt 0, a
    device without a devlink instance None (unknown), and so does a failed port dump."""
    double = KernelDouble(MLX5, DEVLINK / "mlx5-switchdev-ports.txt", ifindexes=IFS)
    poll = Poll([netclass("enp8s0f0np0", 4, "0000:08:00.0"),
                 netclass("enp6s0f0np0", 6, "0000:06:00.0"),
                 netclass("veth0", 9, None), netclass("eth9", 10, "0000:99:00.0")])
    dl.DevlinkSource(double).read(poll)
    assert poll.parts["enp6s0f0np0"]["devlink_vf_ports"] == 2
    assert poll.parts["enp8s0f0np0"]["devlink_vf_ports"] == 0
    assert "devlink_vf_ports" not in poll.parts["veth0"]
    assert "devlink_vf_ports" not in poll.parts["eth9"]
    failed = dl.DevlinkResult(double.read_all().reporters, (), {"PORT_GET": "EIO"})
    assert dl.vf_ports(netclass("enp6s0f0np0", 6, "0000:06:00.0"), failed) is None


def test_source_maps_device_reporters_by_pci_and_port_reporters_by_netdev():
    double = KernelDouble(MLX5, DEVLINK / "octeontx2-af.txt", ifindexes=IFS)
    poll = Poll([netclass("enp8s0f0np0", 4, "0000:08:00.0"),
                 netclass("enp8s0f1np1", 5, "0000:08:00.1"),
                 netclass("veth0", 9, None)])
    dl.DevlinkSource(double).read(poll)
    assert not poll.errors
    first = poll.parts["enp8s0f0np0"]["devlink_health"]
    assert [(r.port, r.name) for r in first] == [
        (None, "fw"), (None, "fw_fatal"), (None, "vnic"), (65535, "tx"), (65535, "rx")]
    second = poll.parts["enp8s0f1np1"]["devlink_health"]
    assert {r.handle for r in second} == {"pci/0000:08:00.1"}
    assert [r.name for r in second if r.state == "error"] == ["fw_fatal"]
    assert poll.parts["enp8s0f1np1"]["devlink_port"].number == 1
    assert poll.parts["veth0"] == {}  # no devlink device: nothing, not an error
    # the octeontx2 AF backs no selected interface: its reporters go nowhere
    assert not any(r.handle.startswith("pci/0002") for p in poll.parts.values()
                   for r in p.get("devlink_health", ()))
    assert double.requests == [dl.DEVLINK_CMD_HEALTH_REPORTER_GET, dl.DEVLINK_CMD_PORT_GET,
                               dl.DEVLINK_CMD_INFO_GET]


NSIM = DEVLINK / "netdevsim-6.12.txt"
NSIM_IFS = {"nsim11p1": 9, "nsim11p2": 10, "nsim12p1": 11, "nsim12p2": 12}


def test_device_reporters_of_a_non_pci_instance_reach_the_netdevs_of_its_ports():
    """The lab's finding (tests/lab/test_lab_nsim_devlink.py): netdevsim's devlink handle is
    netdevsim/netdevsim12, bus and device name as devlink_nl_put_handle puts them for every
    instance (net/devlink/devl_internal.h; reporters: health.c, ports: port.c), and its
    netdevs have no PCI address. Its device reporters (empty, dummy: netdevsim's health.c)
    reached no interface: matched by pci/<PCI address> only. The interface's devlink port
    names the instance; each port's netdev gets that instance's reporters, not the other
    instance's."""
    double = KernelDouble(NSIM, ifindexes=NSIM_IFS)
    poll = Poll([netclass(name, ifindex, None) for name, ifindex in NSIM_IFS.items()])
    dl.DevlinkSource(double).read(poll)
    assert not poll.errors
    for name in ("nsim12p1", "nsim12p2"):
        reporters = poll.parts[name]["devlink_health"]
        assert [(r.handle, r.port, r.name, r.state, r.errors, r.recoveries)
                for r in reporters] == [
            ("netdevsim/netdevsim12", None, "empty", "healthy", 0, 0),
            ("netdevsim/netdevsim12", None, "dummy", "error", 3, 1)]
        assert poll.parts[name]["devlink_port"].handle == "netdevsim/netdevsim12"
        assert poll.parts[name]["devlink_vf_ports"] == 0
    assert [r.state for r in poll.parts["nsim11p1"]["devlink_health"]] == ["healthy"] * 2
    assert {r.handle for r in poll.parts["nsim11p2"]["devlink_health"]} == {
        "netdevsim/netdevsim11"}


def test_a_port_without_ifindex_maps_by_netdev_name():
    """The port found by name also names its instance, so the interface (here without a PCI
    address) gets that instance's device reporters, then its port's."""
    double = KernelDouble(MLX5)  # PORT_NETDEV_NAME only
    poll = Poll([netclass("enp8s0f0np0", 4, None)])
    dl.DevlinkSource(double).read(poll)
    assert [(r.handle, r.port, r.name) for r in poll.parts["enp8s0f0np0"]["devlink_health"]] \
        == [("pci/0000:08:00.0", None, "fw"), ("pci/0000:08:00.0", None, "fw_fatal"),
            ("pci/0000:08:00.0", None, "vnic"), ("pci/0000:08:00.0", 65535, "tx"),
            ("pci/0000:08:00.0", 65535, "rx")]


class _Failing:
    def __init__(self, exc):
        self.exc = exc

    def read_all(self):
        raise self.exc

    def close(self):
        pass


def test_a_failed_dump_is_one_error_for_the_poll_and_no_part():
    poll = Poll([netclass("enp8s0f0np0", 4, "0000:08:00.0")])
    dl.DevlinkSource(_Failing(OSError(105, "No buffer space available"))).read(poll)
    assert [(d, e.source, e.kind) for d, e in poll.errors] == [("", "devlink", "ENOBUFS")]
    assert poll.parts["enp8s0f0np0"] == {}


def test_a_kernel_before_health_reporters_is_not_an_error_every_poll():
    result = dl.decode_dumps(None, [], {"HEALTH_REPORTER_GET": "EOPNOTSUPP"})

    class Old:
        def read_all(self):
            return result

        def close(self):
            pass
    poll = Poll([netclass("enp8s0f0np0", 4, "0000:08:00.0")])
    dl.DevlinkSource(Old()).read(poll)
    assert poll.errors == []


def test_a_reply_that_does_not_fit_the_layout_is_a_parse_error_not_a_crash():
    good = reporter_message(TextReporter("pci/0000:08:00.0", None, "fw",
                                         {"state": "healthy", "error": "0", "recover": "0"}))
    cut = good[4:-6]  # genlmsghdr stripped, last attribute cut short
    result = dl.decode_dumps([cut], [], {})
    assert result.errors == {"HEALTH_REPORTER_GET": "parse"} and result.reporters == ()
    no_nest = nla(dl.DEVLINK_ATTR_BUS_NAME, b"pci\0") + nla(dl.DEVLINK_ATTR_DEV_NAME, b"x\0")
    with pytest.raises(ParseError):
        dl.parse_reporter(no_nest)


def test_an_undefined_state_reads_unknown_never_healthy():
    r = TextReporter("pci/0000:08:00.0", None, "fw",
                     {"state": "weird", "error": "0", "recover": "0"})
    assert dl.parse_reporter(reporter_message(r)[4:]).state == "unknown"
