"""Records of the rest of a NIC and its host: the netdev's sysfs class, devlink, modules,
VFs, queues, interrupts, softnet, bonding, hwmon, and source runs and errors."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from nicwatch.model.ethtool import _empty, _no_nodes


@dataclass(frozen=True, slots=True)

class NetClass:
    """/sys/class/net/<device>: link state, kernel stats and the device behind it."""

    name: str
    ifindex: int | None
    address: str | None
    operstate: str | None
    mtu: int | None
    speed_mbps: int | None
    duplex: str | None
    carrier: bool | None
    carrier_changes: int | None
    carrier_up_count: int | None
    carrier_down_count: int | None
    device_path: str | None  # realpath of the `device` link, relative to the sysfs root
    pci_address: str | None  # the PCI function at or above device_path
    driver: str | None  # basename of device/driver (walking up from a virtio child)
    # statistics/* (rtnl_link_stats64 fields)
    stats: Mapping[str, int] = field(default_factory=_empty)
    dev_port: int | None = None  # port index within its PCI function (mlx4: 0, 1)
    phys_port_id: str | None = None  # physical port identity (hex); None: driver has none



@dataclass(frozen=True, slots=True)

class DevlinkPort:
    """A devlink port (DEVLINK_CMD_PORT_GET): the device it belongs to (``handle``, such as
    ``pci/0000:08:00.0``), its index, the netdev it backs and its physical identity.
    ``flavour``: physical, cpu, dsa, pci_pf, pci_vf, virtual, unused, pci_sf (or the number
    of one this code does not know); ``split_subport`` is None for a port that is not split."""

    handle: str
    index: int
    netdev_ifindex: int | None
    netdev_name: str | None
    flavour: str | None
    number: int | None
    split_group: int | None = None
    split_subport: int | None = None
    pf: int | None = None
    vf: int | None = None



@dataclass(frozen=True, slots=True)

class DevlinkHealthReporter:
    """One devlink health reporter (DEVLINK_CMD_HEALTH_REPORTER_GET) of a device
    (``port`` None) or of one of its ports. ``state`` is ``healthy``, ``error``, or
    ``unknown`` for a value the kernel did not define; ``errors`` and ``recoveries`` are the
    kernel's u64 counts since the reporter was created (driver load). ``grace_period_ms`` and
    ``auto_recover`` are None for a reporter without a recover operation, ``auto_dump`` for one
    without a dump operation; ``last_dump_time`` (wall clock, seconds) is None while no dump
    is stored."""

    handle: str
    port: int | None
    name: str
    state: str
    errors: int
    recoveries: int
    grace_period_ms: int | None
    auto_recover: bool | None
    auto_dump: bool | None
    last_dump_time: float | None

    @property
    def recoverable(self) -> bool:
        """Whether the reporter has a recover operation: the kernel sends GRACEFUL_PERIOD
        and AUTO_RECOVER only then (devlink_nl_health_reporter_fill). Without one, devlink
        never recovers it (``devlink health recover`` answers EOPNOTSUPP), its recovery
        count stays 0 and its state returns to healthy only when the driver sets it."""
        return self.grace_period_ms is not None or self.auto_recover is not None



@dataclass(frozen=True, slots=True)

class ModuleEeprom:
    """A pluggable module's EEPROM as read, in 128-byte halves (SFF-8472/8636/CMIS memory map).

    ``lower``: i2c address (0x50, 0x51) -> bytes 0..127 of that address (len <= 128).
    ``upper``: (i2c address, bank, page) -> bytes 128..255 of that page (len <= 128).
    ``read_at``: wall clock (epoch seconds) when the read finished. ``power``: the power mode
    the kernel reported at that read. Halves may be missing (a
    dump with only some pages, a page the module lacks): decoders decode what is there.
    """

    lower: Mapping[int, bytes]
    upper: Mapping[tuple[int, int, int], bytes]
    read_at: float
    power: ModulePowerMode | None = None  # ethtool MODULE_GET at the same read; None: not asked



@dataclass(frozen=True, slots=True)

class ModulePowerMode:
    """The module power mode the kernel reports (ethtool netlink ``MODULE_GET``, 5.16+):
    ``policy`` ``high`` or ``auto`` (ETHTOOL_A_MODULE_POWER_MODE_POLICY), ``mode`` ``low``
    or ``high`` (ETHTOOL_A_MODULE_POWER_MODE); None where the driver does not report it."""

    policy: str | None
    mode: str | None



# ModuleReadStatus.state, and "corrupt": a read whose checksums fail (decided in normalize).
MODULE_STATES = ("ok", "unsupported", "absent", "not_permitted", "failed", "corrupt", "busy")



@dataclass(frozen=True, slots=True)

class ModuleReadStatus:
    """How reading one interface's module EEPROM fares (read on the module source's own
    thread and cadence, not per poll).

    ``state``: ``ok`` (the last attempt read the module), ``unsupported`` (the driver or the
    kernel has no module EEPROM access: EOPNOTSUPP), ``absent`` (no module answers: ENODEV,
    EIO, as an empty cage reads), ``not_permitted`` (EPERM: no CAP_NET_ADMIN), ``busy``
    (EBUSY: the kernel refuses module reads while module firmware is flashed) or ``failed``
    (any other error). ``attempted_at``: wall clock of the last attempt. ``errors``: failed
    attempts since start by kind (errno name, or ``parse``); ``unsupported``, ``absent``,
    ``not_permitted`` and ``busy`` are states, not counted.
    """

    state: str
    attempted_at: float
    errors: Mapping[str, int]



@dataclass(frozen=True, slots=True)

class VfInfo:
    """One SR-IOV virtual function as its PF reports it (RTM_GETLINK with RTEXT_FILTER_VF:
    one ``IFLA_VF_INFO`` of ``IFLA_VFINFO_LIST``, filled by the kernel's rtnl_fill_vfinfo()).

    ``vf``: the VF number. ``vlan``/``qos``/``vlan_proto``: the port VLAN the PF enforces on
    the VF (0: none). ``link_state``: auto, enable or disable. ``spoofchk``/``trust``: None
    where the driver does not report them (the kernel sends -1). ``stats``: the VF's counters
    by the kernel's names (rx_packets, tx_packets, rx_bytes, tx_bytes, broadcast, multicast,
    rx_dropped, tx_dropped); empty when the reply had none.
    """

    vf: int
    mac: str | None
    vlan: int | None
    qos: int | None
    vlan_proto: str | None  # "802.1Q", "802.1ad" or the hex ethertype
    link_state: str | None
    spoofchk: bool | None
    trust: bool | None
    min_tx_rate_mbps: int | None
    max_tx_rate_mbps: int | None
    stats: Mapping[str, int] = field(default_factory=_empty)



@dataclass(frozen=True, slots=True)

class SriovState:
    """SR-IOV of one PF: the VF counts sysfs shows (``device/sriov_numvfs``, enabled;
    ``device/sriov_totalvfs``, the most the device allows) and what the kernel's link reply
    said. ``announced``: its IFLA_NUM_VF, None when netlink was not read; the kernel puts
    ``dev_num_vf()`` there before it asks the driver anything, so it always equals the VFs
    enabled and says nothing about what the driver could describe. ``vfs``: the
    IFLA_VF_INFO entries the reply holds; a VF whose ``ndo_get_vf_config`` failed this poll
    (ice during a VF reset, i40e while another VF operation is pending) is skipped by the
    kernel and missing here. ``unreadable``: the VF numbers not readable this poll, missing
    from the list or with counters the kernel zero-filled after the driver's
    ``ndo_get_vf_stats`` failed (their ``stats`` are empty).
    """

    enabled: int | None
    total: int | None
    announced: int | None
    vfs: tuple[VfInfo, ...] = ()
    unreadable: tuple[int, ...] = ()



# netdev generic netlink qstats (Documentation/netlink/specs/netdev.yaml, attribute set

# "qstats"; include/uapi/linux/netdev.h NETDEV_A_QSTATS_*): attribute number -> name, as the

# spec spells it. 8-11 since 6.9, the rest since 6.10.

QSTATS: Mapping[int, str] = MappingProxyType({
    8: "rx-packets", 9: "rx-bytes", 10: "tx-packets", 11: "tx-bytes",
    12: "rx-alloc-fail", 13: "rx-hw-drops", 14: "rx-hw-drop-overruns",
    15: "rx-csum-complete", 16: "rx-csum-unnecessary", 17: "rx-csum-none", 18: "rx-csum-bad",
    19: "rx-hw-gro-packets", 20: "rx-hw-gro-bytes", 21: "rx-hw-gro-wire-packets",
    22: "rx-hw-gro-wire-bytes", 23: "rx-hw-drop-ratelimits", 24: "tx-hw-drops",
    25: "tx-hw-drop-errors", 26: "tx-csum-none", 27: "tx-needs-csum", 28: "tx-hw-gso-packets",
    29: "tx-hw-gso-bytes", 30: "tx-hw-gso-wire-packets", 31: "tx-hw-gso-wire-bytes",
    32: "tx-hw-drop-ratelimits", 33: "tx-stop", 34: "tx-wake",
})



@dataclass(frozen=True, slots=True)

class NetdevQueue:
    """One queue of an interface as the netdev family's queue-get lists it (6.8+; only the
    queues of an interface that is up). ``kind``: ``rx`` or ``tx`` (each its own id space);
    ``napi_id``: the NAPI instance that serves it, None where the driver does not link its
    queues to NAPIs (netif_queue_set_napi: veth does not)."""

    kind: str
    id: int
    napi_id: int | None



@dataclass(frozen=True, slots=True)

class Napi:
    """One NAPI instance (netdev napi-get, 6.8+). ``irq``: the interrupt that schedules it,
    None where the driver did not say (netif_napi_set_irq: virtio_net and veth do not);
    ``pid``: its kernel thread in threaded mode, None in softirq mode."""

    id: int
    irq: int | None
    pid: int | None



@dataclass(frozen=True, slots=True)

class QueueStats:
    """The qstats of one queue (qstats-get with scope queue, 6.9+): ``stats`` maps the
    netdev.yaml names (:data:`QSTATS`) to values, only those the driver filled. Per queue
    the kernel counts "since the last reconfiguration" and only active queues: they need
    not add up to the device's totals."""

    kind: str
    id: int
    stats: Mapping[str, int]



@dataclass(frozen=True, slots=True)

class NetdevQueues:
    """What the netdev generic netlink family said about one interface. ``queues`` /
    ``napis``: None when not read (a kernel without queue-get / napi-get); ``queue_stats``:
    per queue; ``stats``: device scope, rx and tx together (the queues' counts plus what the
    driver keeps for queues gone since); None when the driver has no qstats
    (netdev_stat_ops: veth has none, virtio_net since 6.10)."""

    queues: tuple[NetdevQueue, ...] | None
    napis: tuple[Napi, ...] | None
    queue_stats: tuple[QueueStats, ...] = ()
    stats: Mapping[str, int] | None = None



@dataclass(frozen=True, slots=True)

class Irq:
    """One interrupt of an interface's device. ``name``: its action name(s) (the last column
    of /proc/interrupts, /sys/kernel/irq/<n>/actions), e.g. ``mlx5_comp3@pci:0000:17:00.0``
    or ``ice-ens1f0-TxRx-3``; ``counters``: interrupts taken per CPU, index = CPU number,
    the kernel's unsigned int counts since boot (32 bits: they wrap); None: not read.
    ``affinity`` / ``effective``: CPUs of /proc/irq/<n>/smp_affinity_list (where it may go)
    and effective_affinity_list (where the interrupt controller delivers it, 4.13+); None:
    not readable (a kernel without the file, an interrupt without affinity)."""

    irq: int
    name: str | None
    counters: tuple[int, ...] | None
    affinity: tuple[int, ...] | None
    effective: tuple[int, ...] | None



# Columns of /proc/net/softnet_stat nicwatch keeps (net/core/net-procfs.c softnet_seq_show),

# in SoftnetCpu.counters order. Each is the kernel's unsigned int, so it wraps at 2^32.
SOFTNET_FIELDS = ("processed", "dropped", "time_squeeze", "received_rps", "flow_limit_count")



@dataclass(frozen=True, slots=True)

class SoftnetCpu:
    """One CPU's line of /proc/net/softnet_stat: ``counters`` in :data:`SOFTNET_FIELDS`
    order (None where this kernel prints no such column)."""

    cpu: int
    counters: tuple[int | None, ...]



@dataclass(frozen=True, slots=True)

class ReceivePath:
    """The receive path of one interface as procfs and sysfs show it.

    ``irqs``: the interrupts of its device (its PCI function's ``msi_irqs``, else its
    legacy ``irq``) and of its NAPI instances; ``irqs_from``: where their numbers came from
    (``msi_irqs``, ``irq``, ``napi``, joined by ``+``; ``""``: none found). ``rps``: rx
    queue -> CPUs of its non-empty ``queues/rx-<n>/rps_cpus`` mask (receive packet steering:
    those CPUs process the queue's packets after the interrupt). ``softnet``: the
    softnet_stat lines of the CPUs that serve it (its interrupts' effective affinity, else
    their affinity, and its RPS CPUs). ``cpu_nodes``: CPU -> NUMA node for the whole host
    (one shared object), empty when the host shows no nodes."""

    irqs: tuple[Irq, ...]
    irqs_from: str
    rps: tuple[tuple[int, tuple[int, ...]], ...] = ()
    softnet: tuple[SoftnetCpu, ...] = ()
    cpu_nodes: Mapping[int, int] = field(default_factory=_no_nodes)



@dataclass(frozen=True, slots=True)

class SourceRun:
    """How one source's read went in one poll: ``up`` unless it raised or reported a failure
    as a whole (an error for device ""); ``seconds`` it took (wall clock)."""

    source: str
    up: bool
    seconds: float



@dataclass(frozen=True, slots=True)

class BondMember:
    """An interface enslaved to a Linux bond (sysfs ``bonding_slave/``): the bond's name and
    mode (``active-backup``, ``802.3ad``, ... as ``bonding/mode`` names it), the member's state
    in it (``active`` or ``backup``) and its link as the bond monitors it (``mii_status``:
    ``up``, ``going down``, ``down``, ``going back``). None where a file was unreadable."""

    bond: str
    mode: str | None
    state: str | None
    mii_status: str | None



@dataclass(frozen=True, slots=True)

class HwmonTemperature:
    """One temperature channel (``tempN_*``) of a NIC's hwmon device, in degrees Celsius
    (the files hold millidegrees). ``label``: ``tempN_label`` (mlx5: the firmware's sensor
    name, ``asic``, ``Module0``), else ``tempN``. ``highest``: the highest value since the
    history was reset (mlx5 ``tempN_highest``); ``warning``, ``critical``, ``emergency``,
    ``shutdown``: the driver's thresholds (``tempN_max``, ``_crit``, ``_emergency``, bnxt's
    ``temp1_shutdown``). None where the driver has no such file or it was unreadable."""

    channel: int
    label: str
    celsius: float | None
    highest: float | None = None
    warning: float | None = None
    critical: float | None = None
    emergency: float | None = None
    shutdown: float | None = None



@dataclass(frozen=True, slots=True)

class NicHwmon:
    """The hwmon device a NIC driver registered under a PCI function (mlx5, bnxt_en, ice:
    ``hwmon_device_register_with_info`` on the function's device): ``hwmon`` its directory
    name (``hwmon3``), ``name`` its ``name`` file (the driver: ``mlx5``, ``bnxt_en``,
    ``ice``), ``pci_address`` the function it hangs under (another function of the same card
    for an interface whose own function has none: ice registers on PF 0 only)."""

    hwmon: str
    name: str
    pci_address: str
    temperatures: tuple[HwmonTemperature, ...]



@dataclass(frozen=True, slots=True)

class DevlinkVersion:
    """One version a devlink instance reports (``devlink dev info``): ``slot`` running (what
    the device runs now), stored (what it will run after activation: the flashed image) or
    fixed (hardware identity: board, ASIC, PSID); ``name`` the component (``fw.version``,
    ``fw.mgmt``, ``fw.psid``, ...), ``value`` as the driver prints it."""

    slot: str
    name: str
    value: str



@dataclass(frozen=True, slots=True)

class DevlinkInfo:
    """``DEVLINK_CMD_INFO_GET`` of one devlink instance: its handle, driver name and serial
    number where reported, and its versions in the kernel's order."""

    handle: str
    driver: str | None
    serial: str | None
    versions: tuple[DevlinkVersion, ...]



@dataclass(frozen=True, slots=True)

class SourceError:
    """A source that failed for one interface in one poll. ``kind`` is stable (an errno
    name such as ``ENODEV``, or ``parse``); ``message`` is for people."""

    source: str
    kind: str
    message: str
