"""The other end of each simulated port for `nicwatch demo` (docs/fabric.md): a leaf switch
announcing itself by LLDP with its IEEE 802.1Qaz DCBX (PFC on the demo's priority 3, RoCE v2
on priority 3), and, on the last port, a NIC whose firmware runs the LLDP agent: no frames
reach the host there, and the peer's configuration comes from the driver's dcbnl peer
attributes instead (SimulatedDcb.ieee_with_peer)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import ClassVar

from nicwatch.demo.simulate import PFC_PRIORITY, Simulation
from nicwatch.model import DcbApp, DcbxEts, DcbxPfc, LldpNeighbor, LldpPort, Reading
from nicwatch.sources import Poll

SWITCH_CHASSIS = "0c:42:a1:5e:00:01"
SWITCH_NAME = "leaf-a1"
ROCE_V2_UDP_PORT, SEL_UDP = 4791, 3
LLDP_INTERVAL = 30.0  # seconds between two LLDPDUs of the simulated switch
FIRMWARE_DETAIL = "dcbx=firmware"


def firmware_port(simulation: Simulation) -> str:
    """The port whose simulated NIC firmware runs the LLDP agent: the last one."""
    return max(simulation.ports.values(), key=lambda p: p.ifindex).name


class SimulatedLldp:
    """The ``lldp`` part of each simulated port, as the LLDP source would put it."""

    name = "lldp"
    fills: ClassVar[frozenset[str]] = frozenset({"lldp"})
    needs: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, simulation: Simulation, clock: Callable[[], float] = time.time) -> None:
        self.simulation = simulation
        self.clock = clock
        self.started = clock()

    def neighbor(self, ifindex: int, now: float) -> LldpNeighbor:
        # the last LLDPDU: the switch sends every 30 s from when the demo started
        last = now - (now - self.started) % LLDP_INTERVAL
        return LldpNeighbor(
            chassis_id=SWITCH_CHASSIS, chassis_id_subtype="mac",
            port_id=f"Ethernet{4 * (ifindex - 2)}", port_id_subtype="interface_name", ttl=120,
            system_name=SWITCH_NAME, port_description=f"to-host-port{ifindex - 2}",
            management_address="198.18.255.1",
            pfc=DcbxPfc(willing=False, mbc=False, capability=8, enabled=(PFC_PRIORITY,)),
            ets=DcbxEts(willing=False, cbs=False, max_tcs=8,
                        prio_tc=tuple(p if p in (PFC_PRIORITY, 6) else 0 for p in range(8)),
                        tc_bw=tuple(50 if t in (0, PFC_PRIORITY) else 0 for t in range(8)),
                        tc_tsa=tuple("strict" if t == 6 else "ets" for t in range(8))),
            apps=(DcbApp(SEL_UDP, PFC_PRIORITY, ROCE_V2_UDP_PORT),), received_at=last)

    def read(self, poll: Poll) -> None:
        now = self.clock()
        firmware = firmware_port(self.simulation)
        for nc in poll.interfaces:
            spec = self.simulation.ports.get(nc.name)
            if spec is None:
                continue
            if nc.name == firmware:
                port = LldpPort("firmware_agent", firmware_detail=FIRMWARE_DETAIL)
            else:
                port = LldpPort("ok", (self.neighbor(spec.ifindex, now),),
                                frames=1 + int((now - self.started) // LLDP_INTERVAL))
            poll.put(nc.name, Reading.lldp, port)

    def close(self) -> None:
        pass
