"""The kernel-reader doubles of the simulated host (see demo/simulate.py): each has the
methods of the real reader it stands in for and answers from one Simulation."""

from __future__ import annotations

import errno
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from types import MappingProxyType

from nicwatch.demo.ports import (
    CHANNELS,
    CNP_DSCP,
    CNP_PRIORITY,
    DRIVER,
    DRIVER_VERSION,
    DSCP_SELECTOR,
    PFC_PRIORITY,
    ROCE_DSCP,
    VF_DROP_RATIO,
    VF_DROPPING,
    VF_SHARES,
    PortSpec,
    stat_names,
)
from nicwatch.demo.simulation import Simulation
from nicwatch.model import (
    Channels,
    DcbApp,
    DcbPeer,
    DcbQos,
    DevlinkHealthReporter,
    DevlinkInfo,
    DevlinkPort,
    DevlinkVersion,
    DriverInfo,
    IeeeEts,
    IeeePfc,
    ModuleEeprom,
    Napi,
    NetdevQueue,
    QueueStats,
    Rings,
    StatSet,
    VfInfo,
)
from nicwatch.sources.devlink import DevlinkResult
from nicwatch.sources.ethtool_ioctl import EthtoolError
from nicwatch.sources.ethtool_module import ModuleReadError
from nicwatch.sources.ethtool_netlink import NetlinkResult
from nicwatch.sources.netdev_genl import Dumps
from nicwatch.sources.sriov import VfError

UPLINK_PORT = 0xFFFF  # mlx5's uplink devlink port index on a function with vhca_id 0

class SimulatedEthtool:
    """The methods of :class:`~nicwatch.sources.ethtool_ioctl.EthtoolIoctl`, answered from a
    :class:`Simulation`. An interface it does not simulate fails with ENODEV, as the ioctl
    does for a vanished interface."""

    GENERATION = 1  # the stat set never changes

    def __init__(self, simulation: Simulation) -> None:
        self.simulation = simulation
        self._names = stat_names()

    def _port(self, ifname: str) -> PortSpec:
        port = self.simulation.ports.get(ifname)
        if port is None:
            raise EthtoolError(errno.ENODEV, f"{ifname}: No such device (not simulated)")
        return port

    def driver_info(self, ifname: str) -> DriverInfo:
        port = self._port(ifname)
        return DriverInfo(driver=DRIVER, version=DRIVER_VERSION,
                          firmware_version=f"{28 if port.card == 'ConnectX-7' else 22}.39.1002 "
                          "(simulated)", bus_info=port.bdf, n_stats=len(self._names))

    def perm_address(self, ifname: str) -> str:
        return self._port(ifname).mac

    def statistics(self, ifname: str) -> StatSet:
        stats = self.simulation.ethtool_stats(self._port(ifname).name)
        return StatSet(self._names, tuple(stats[n] for n in self._names), self.GENERATION)

    def rings(self, ifname: str) -> Rings:
        return self.simulation.rings(self._port(ifname).name)

    def channels(self, ifname: str) -> Channels:
        return self.simulation.channels(self._port(ifname).name)

    def forget(self, ifname: str) -> None:
        """Nothing is cached per interface."""

    def close(self) -> None:
        """No socket to close."""


class SimulatedEthtoolNetlink:
    """:meth:`~nicwatch.sources.ethtool_netlink.EthtoolNetlink.read_all` from a
    :class:`Simulation`."""

    def __init__(self, simulation: Simulation) -> None:
        self.simulation = simulation

    def read_all(self, ifindexes: Iterable[int] | None = None) -> NetlinkResult:
        wanted = self.simulation.by_ifindex if ifindexes is None else {
            i: self.simulation.by_ifindex[i] for i in ifindexes if i in self.simulation.by_ifindex}
        infos = {i: self.simulation.netlink_info(p.name) for i, p in wanted.items()}
        return NetlinkResult(infos=MappingProxyType(infos), errors=MappingProxyType({}))

    def close(self) -> None:
        """No socket to close."""


class SimulatedModules:
    """The module EEPROM reader of the simulated ports (the module source's ``reader``): each
    read returns the real 800G OSFP EEPROM of :mod:`nicwatch.demo.module_eeprom`, with the
    spec-built VDM pages of :mod:`nicwatch.demo.module_vdm`, stamped with the time it was
    read."""

    def __init__(self, simulation: Simulation, clock: Callable[[], float] = time.time) -> None:
        from nicwatch.demo.module_eeprom import DUMP
        from nicwatch.demo.module_vdm import with_vdm
        from nicwatch.normalize.module.hexdump import parse
        self.simulation = simulation
        self._eeprom = with_vdm(parse(DUMP).eeprom)  # VDM pages spec-built (module_vdm.py)
        self._clock = clock

    def read_module(self, ifindex: int, ifname: str,
                    should_stop: Callable[[], bool] = lambda: False) -> ModuleEeprom:
        if ifname not in self.simulation.ports:
            raise ModuleReadError(errno.ENODEV, f"{ifname}: not simulated")
        return replace(self._eeprom, read_at=self._clock())

    def close(self) -> None:
        pass


class SimulatedDcb:
    """:meth:`~nicwatch.sources.dcbnl.DcbNetlink.ieee_pfc` from a :class:`Simulation`: PFC
    on priority 3 with mlx5's per-priority frame counts."""

    def __init__(self, simulation: Simulation) -> None:
        self.simulation = simulation

    def ieee(self, ifname: str) -> tuple[IeeePfc | None, DcbQos | None]:
        """PFC as :meth:`ieee_pfc` and the usual RoCE profile: DSCP trust, RoCE's DSCP 26 on
        the PFC priority, CNPs' DSCP 48 on priority 6 (strict), ETS splitting the rest."""
        if ifname not in self.simulation.ports:
            return None, None
        prio_tc = tuple(p if p in (PFC_PRIORITY, CNP_PRIORITY) else 0 for p in range(8))
        ets = IeeeEts(willing=False, ets_cap=8, prio_tc=prio_tc,
                      tc_tx_bw=tuple(50 if t in (0, PFC_PRIORITY) else 0 for t in range(8)),
                      tc_tsa=tuple("strict" if t == CNP_PRIORITY else "ets" for t in range(8)))
        apps = (DcbApp(DSCP_SELECTOR, PFC_PRIORITY, ROCE_DSCP),
                DcbApp(DSCP_SELECTOR, CNP_PRIORITY, CNP_DSCP))
        return self.ieee_pfc(ifname), DcbQos(ets=ets, apps=apps, apptrust=None)

    def ieee_with_peer(self, ifname: str
                       ) -> tuple[IeeePfc | None, DcbQos | None, DcbPeer | None]:
        """:meth:`ieee` and, for the last port only (its simulated firmware runs the DCBX
        agent, demo/fabric.py), the switch's configuration as that agent learned it: PFC on
        priority 3, RoCE v2 on priority 3."""
        pfc, qos = self.ieee(ifname)
        last = max(self.simulation.ports.values(), key=lambda p: p.ifindex).name
        if ifname != last or pfc is None:
            return pfc, qos, None
        return pfc, qos, DcbPeer(pfc=pfc, ets=qos.ets if qos else None,
                                 apps=(DcbApp(3, PFC_PRIORITY, 4791),))

    def ieee_pfc(self, ifname: str) -> IeeePfc | None:
        if ifname not in self.simulation.ports:
            return None
        c = self.simulation.counters(ifname)
        sent, received = [0] * 8, [0] * 8
        sent[PFC_PRIORITY], received[PFC_PRIORITY] = c["tx_pauses"], c["rx_pauses"]
        return IeeePfc(enabled=(PFC_PRIORITY,), capability=8, mbc=False, delay=0,
                       requests=tuple(sent), indications=tuple(received))

    def close(self) -> None:
        """No socket to close."""


class SimulatedDevlink:
    """:meth:`~nicwatch.sources.devlink.DevlinkNetlink.read_all` from a :class:`Simulation`:
    the reporters and uplink port mlx5_core registers for each port's PCI function (grace
    periods and operations as the driver's: see tests/fixtures/devlink/mlx5-cx6dx.txt)."""

    def __init__(self, simulation: Simulation, clock: Callable[[], float] = time.time) -> None:
        self.simulation = simulation
        self.started = clock()  # wall time of the dump the marginal optic's tx reporter holds

    def read_all(self) -> DevlinkResult:
        reporters, ports = [], []
        for port in self.simulation.ports.values():
            handle = f"pci/{port.bdf}"
            tx_errors = 2 if port.bad_optic else 0
            reporters += [
                DevlinkHealthReporter(handle, None, "fw", "healthy", 0, 0, None, None, True,
                                      None),
                DevlinkHealthReporter(handle, None, "fw_fatal", "healthy", 0, 0, 60_000, True,
                                      True, None),
                DevlinkHealthReporter(handle, None, "vnic", "healthy", 0, 0, None, None, None,
                                      None),
                DevlinkHealthReporter(handle, UPLINK_PORT, "tx", "healthy", tx_errors,
                                      tx_errors, 500, True, True,
                                      self.started if tx_errors else None),
                DevlinkHealthReporter(handle, UPLINK_PORT, "rx", "healthy", 0, 0, 500, True,
                                      True, None),
            ]
            ports.append(DevlinkPort(handle, UPLINK_PORT, port.ifindex, port.name, "physical",
                                     0))
        return DevlinkResult(tuple(reporters), tuple(ports),
                             infos=tuple(_devlink_info(p, i) for i, p in
                                         enumerate(self.simulation.ports.values())))

    def close(self) -> None:
        """No socket to close."""


RUNNING_FW, FLASHED_FW = "28.39.1002", "28.41.1000"


def _devlink_info(port: PortSpec, number: int) -> DevlinkInfo:
    """`devlink dev info` as mlx5_core reports it (mlx5/core/devlink.c: fixed fw.psid,
    running and stored fw.version and fw; layout of the published dump in
    tests/fixtures/devlink/info-mlx5-query-failed.txt). Port 0 has a newer image flashed
    and not activated yet."""
    stored = FLASHED_FW if number == 0 else RUNNING_FW
    return DevlinkInfo(f"pci/{port.bdf}", "mlx5_core", f"MT22{number:02d}X0000{number}", (
        DevlinkVersion("fixed", "fw.psid", "MT_0000000838"),
        DevlinkVersion("running", "fw.version", RUNNING_FW),
        DevlinkVersion("running", "fw", RUNNING_FW),
        DevlinkVersion("stored", "fw.version", stored),
        DevlinkVersion("stored", "fw", stored)))




class SimulatedVfs:
    """:meth:`~nicwatch.sources.sriov.SriovNetlink.vfs` from a :class:`Simulation`: the VFs
    of ports with ``vfs``, their counters fixed shares of the port's netdev counters (so
    monotonic with them), administrative MACs, VLAN 100 + VF and spoof check on."""

    def __init__(self, simulation: Simulation) -> None:
        self.simulation = simulation

    def vfs(self, ifindex: int) -> tuple[int | None, tuple[VfInfo, ...]]:
        port = self.simulation.by_ifindex.get(ifindex)
        if port is None:
            raise VfError(errno.ENODEV, f"RTM_GETLINK ifindex {ifindex}: ENODEV")
        c = self.simulation.counters(port.name)
        out = []
        for vf in range(port.vfs):
            share = VF_SHARES[vf % len(VF_SHARES)]
            rx_packets = int(c["netdev_rx_packets"] * share)
            dropped = int(rx_packets * VF_DROP_RATIO) if vf == VF_DROPPING else 0
            out.append(VfInfo(
                vf=vf, mac=f"02:00:{port.mac[-5:]}:{vf:02x}:01", vlan=100 + vf, qos=0,
                vlan_proto="802.1Q", link_state="auto", spoofchk=True, trust=False,
                min_tx_rate_mbps=0, max_tx_rate_mbps=0,
                stats=MappingProxyType({
                    "rx_packets": rx_packets, "tx_packets": int(c["netdev_tx_packets"] * share),
                    "rx_bytes": int(c["netdev_rx_bytes"] * share),
                    "tx_bytes": int(c["netdev_tx_bytes"] * share),
                    "broadcast": int(rx_packets * 1e-5), "multicast": int(rx_packets * 1e-4),
                    "rx_dropped": dropped, "tx_dropped": 0})))
        return port.vfs, tuple(out)

    def close(self) -> None:
        """No socket to close."""


class SimulatedNetdev:
    """:meth:`~nicwatch.sources.netdev_genl.NetdevGenl.read` from a :class:`Simulation`: per
    port, an rx and a tx queue per channel, both on the channel's NAPI (ids from 8192, as
    the kernel numbers them after its reserved ids), whose irq is the channel's completion
    vector; qstats per queue as mlx5e_get_queue_stats_rx/tx fill them (6.10+: rx packets,
    bytes, alloc-fail; tx packets, bytes, stop, wake) and the device's sums."""

    def __init__(self, simulation: Simulation) -> None:
        self.simulation = simulation

    def read(self, topology: bool) -> Dumps:
        sim = self.simulation
        out = Dumps(queues={} if topology else None, napis={} if topology else None)
        for n, port in enumerate(sim.ports.values()):
            c = sim.counters(port.name)
            packets, rx_bytes = sim.rx_queue_counts(port.name)
            irqs = sim.irq_numbers(port)
            per_queue = []
            for ch in range(CHANNELS):
                napi = 8192 + CHANNELS * n + ch
                if out.queues is not None and out.napis is not None:
                    out.queues.setdefault(port.ifindex, []).extend(
                        (NetdevQueue("rx", ch, napi), NetdevQueue("tx", ch, napi)))
                    out.napis.setdefault(port.ifindex, []).append(Napi(napi, irqs[1 + ch], None))
                per_queue.append(QueueStats("rx", ch, MappingProxyType({
                    "rx-packets": packets[ch], "rx-bytes": rx_bytes[ch], "rx-alloc-fail": 0})))
                per_queue.append(QueueStats("tx", ch, MappingProxyType({
                    "tx-packets": c["netdev_tx_packets"] // CHANNELS,
                    "tx-bytes": c["netdev_tx_bytes"] // CHANNELS, "tx-stop": 0,
                    "tx-wake": 0})))
            out.per_queue[port.ifindex] = per_queue
            totals: dict[str, int] = {}
            for q in per_queue:
                for key, value in q.stats.items():
                    totals[key] = totals.get(key, 0) + value
            out.device[port.ifindex] = totals
        return out

    def interface_name(self, ifindex: int) -> str | None:
        port = self.simulation.by_ifindex.get(ifindex)
        return None if port is None else port.name

    def close(self) -> None:
        """No socket to close."""


