"""devlink dev info (DEVLINK_CMD_INFO_GET): running, stored and fixed versions per instance,
through the real reply path (split_replies, decoding) from replies built to the kernel's
layout (tests/helpers/fixture_devlink.py: devlink_nl_info_fill, devlink_info_version_put)."""

from __future__ import annotations

import errno

from nicwatch.model import DevlinkVersion, SeriesKey
from nicwatch.normalize.devlink import firmware_gauges, pending_components
from nicwatch.sources import Poll
from nicwatch.sources import devlink as dl

from fixture_devlink import DEVLINK, IFS, MLX5, KernelDouble, netclass

PENDING = DEVLINK / "info-mlx5-pending.txt"
FAILED = DEVLINK / "info-mlx5-query-failed.txt"
NSIM_INFO = DEVLINK / "info-netdevsim.txt"


def test_versions_by_slot_in_the_kernels_order():
    result = KernelDouble(MLX5, info=(PENDING,)).read_all()
    first, second = result.infos
    assert (first.handle, first.driver, first.serial) == ("pci/0000:08:00.0", "mlx5_core",
                                                          "MT2225300179")
    assert first.versions == (
        DevlinkVersion("fixed", "fw.psid", "MT_0000000436"),
        DevlinkVersion("running", "fw.version", "22.41.0188"),
        DevlinkVersion("running", "fw", "22.41.0188"),
        DevlinkVersion("stored", "fw.version", "22.43.1014"),
        DevlinkVersion("stored", "fw", "22.43.1014"))
    assert pending_components(first) == {"fw": ("22.43.1014", "22.41.0188"),
                                         "fw.version": ("22.43.1014", "22.41.0188")}
    assert pending_components(second) == {"fw": None, "fw.version": None}


def test_each_interface_gets_its_instances_info():
    double = KernelDouble(MLX5, ifindexes=IFS, info=(PENDING,))
    poll = Poll([netclass("enp8s0f0np0", 4, "0000:08:00.0"),
                 netclass("enp8s0f1np1", 5, "0000:08:00.1"), netclass("veth0", 9, None)])
    dl.DevlinkSource(double).read(poll)
    assert not poll.errors
    assert poll.parts["enp8s0f0np0"]["devlink_info"].handle == "pci/0000:08:00.0"
    assert poll.parts["enp8s0f1np1"]["devlink_info"].handle == "pci/0000:08:00.1"
    assert "devlink_info" not in poll.parts["veth0"]
    assert double.requests == [dl.DEVLINK_CMD_HEALTH_REPORTER_GET, dl.DEVLINK_CMD_PORT_GET,
                               dl.DEVLINK_CMD_INFO_GET]


def test_info_is_dumped_once_per_interval_and_reused_between():
    double = KernelDouble(MLX5, ifindexes=IFS, info=(PENDING,))
    now = [100.0]
    double.clock = lambda: now[0]
    first = double.read_all()
    now[0] += dl.INFO_SECONDS - 1
    assert double.read_all().infos == first.infos
    assert double.requests.count(dl.DEVLINK_CMD_INFO_GET) == 1
    now[0] += 1
    double.read_all()
    assert double.requests.count(dl.DEVLINK_CMD_INFO_GET) == 2


def test_a_refused_info_dump_is_one_error_and_the_other_dumps_still_serve():
    double = KernelDouble(MLX5, ifindexes=IFS, info_errno=errno.EIO)
    poll = Poll([netclass("enp8s0f0np0", 4, "0000:08:00.0")])
    dl.DevlinkSource(double).read(poll)
    assert [(d, e.kind, e.message) for d, e in poll.errors] == [("", "EIO", "INFO_GET failed")]
    assert poll.parts["enp8s0f0np0"]["devlink_health"]
    assert "devlink_info" not in poll.parts["enp8s0f0np0"]
    # a kernel without INFO_GET (EOPNOTSUPP) is no error
    quiet = Poll([netclass("enp8s0f0np0", 4, "0000:08:00.0")])
    dl.DevlinkSource(KernelDouble(MLX5, info_errno=errno.EOPNOTSUPP)).read(quiet)
    assert not quiet.errors


def test_mlx5_unreadable_version_marker_is_not_a_pending_image():
    """The published dump: the stored image's version could not be read (255.255.65535,
    the driver's failure marker): exported as reported, never counted as pending."""
    (info,) = KernelDouble(info=(FAILED,)).read_all().infos
    assert [v.value for v in info.versions if v.slot == "stored"] == ["255.255.65535"] * 2
    assert pending_components(info) == {}
    gauges = firmware_gauges(info)
    assert not any(k.metric == "nic_firmware_activation_pending" for k in gauges)
    assert sum(k.metric == "nic_firmware_info" for k in gauges) == 5


def test_netdevsim_reports_equal_running_and_stored_management_firmware():
    (eleven, twelve) = KernelDouble(info=(NSIM_INFO,)).read_all().infos
    assert eleven.handle == "netdevsim/netdevsim11" and eleven.driver == "netdevsim"
    gauges = firmware_gauges(twelve)
    labels = (("component", "fw.mgmt"), ("devlink", "netdevsim/netdevsim12"))
    assert gauges[SeriesKey("nic_firmware_activation_pending", labels)] == 0.0
    assert gauges[SeriesKey("nic_firmware_info", (
        ("component", "fw.mgmt"), ("devlink", "netdevsim/netdevsim12"), ("slot", "stored"),
        ("version", "10.20.30")))] == 1.0
