"""The other end of the link as series: the neighbour, the peer's PFC and RoCE priority (from
its LLDP TLVs, else the driver's dcbnl peer attributes) beside the port's own, the mismatch
gauge, and the port's own LLDP identity."""

from __future__ import annotations

from nicwatch.model import (
    DcbApp,
    DcbPeer,
    DcbQos,
    DcbxPfc,
    IeeePfc,
    LldpNeighbor,
    LldpPort,
    NetClass,
    Reading,
    SeriesKey,
)
from nicwatch.normalize import normalize

NC = NetClass(name="ens1f0", ifindex=2, address="02:00:00:00:00:0a", operstate="up", mtu=9000,
              speed_mbps=None, duplex=None, carrier=True, carrier_changes=0,
              carrier_up_count=0, carrier_down_count=0, device_path=None, pci_address=None,
              driver=None)
OWN_PFC = IeeePfc(enabled=(3,), capability=8, mbc=False, delay=0, requests=None,
                  indications=None)
OWN_QOS = DcbQos(ets=None, apps=(DcbApp(3, 3, 4791), DcbApp(5, 3, 26)), apptrust=None)
SWITCH = LldpNeighbor(chassis_id="00:1c:73:00:00:01", chassis_id_subtype="mac",
                      port_id="Ethernet12", port_id_subtype="interface_name", ttl=120,
                      system_name="leaf1", port_description=None, management_address="198.18.9.1",
                      pfc=DcbxPfc(False, False, 8, (3, 4)), apps=(DcbApp(3, 4, 4791),),
                      received_at=990.0)


def gauges(**parts: object) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    reading = Reading(device="ens1f0", time=1000.0, monotonic=1.0, netclass=NC,
                      **parts)  # type: ignore[arg-type]
    sample = normalize(reading)
    return {(k.metric, k.labels): v for k, v in sample.gauges.items()
            if "lldp" in k.metric or "roce_priority" in k.metric}


def test_a_switch_that_disagrees_on_pfc_and_the_roce_priority() -> None:
    lldp = LldpPort("ok", (SWITCH,), frames=3, local_chassis_id="02:00:00:00:00:0a",
                    local_port_id="02:00:00:00:00:0a")
    g = gauges(lldp=lldp, dcb_pfc=OWN_PFC, dcb_qos=OWN_QOS)
    ids = (("chassis_id", "00:1c:73:00:00:01"), ("port_id", "Ethernet12"))
    assert g[("nic_lldp_neighbor_info", (*ids, ("chassis_id_subtype", "mac"),
                                         ("port_id_subtype", "interface_name"),
                                         ("system_name", "leaf1"), ("port_description", ""),
                                         ("management_address", "198.18.9.1")))] == 1
    assert g[("nic_lldp_neighbor_age_seconds", ids)] == 10
    assert g[("nic_lldp_neighbor_ttl_seconds", ids)] == 120
    assert g[("nic_lldp_local_info", (("chassis_id", "02:00:00:00:00:0a"),
                                      ("port_id", "02:00:00:00:00:0a")))] == 1
    assert [p for p in range(8) if g[("nic_lldp_peer_pfc_enabled", (
        ("priority", str(p)), ("source", "lldp")))]] == [3, 4]
    assert g[("nic_lldp_peer_roce_priority", (("source", "lldp"),))] == 4
    assert g[("nic_qos_roce_priority", ())] == 3
    assert g[("nic_lldp_peer_dcbx_mismatch", (("setting", "pfc"),))] == 1
    assert g[("nic_lldp_peer_dcbx_mismatch", (("setting", "roce_priority"),))] == 1
    assert g[("nic_lldp_receive_state", (("state", "ok"),))] == 1
    assert g[("nic_lldp_receive_state", (("state", "not_permitted"),))] == 0


def test_an_agreeing_peer_from_the_drivers_dcbx_agent() -> None:
    peer = DcbPeer(pfc=OWN_PFC, ets=None, apps=(DcbApp(3, 3, 4791),))
    g = gauges(dcb_pfc=OWN_PFC, dcb_qos=OWN_QOS, dcb_peer=peer)
    assert g[("nic_lldp_peer_pfc_enabled", (("priority", "3"), ("source", "dcbnl")))] == 1
    assert g[("nic_lldp_peer_roce_priority", (("source", "dcbnl"),))] == 3
    assert g[("nic_lldp_peer_dcbx_mismatch", (("setting", "pfc"),))] == 0
    assert g[("nic_lldp_peer_dcbx_mismatch", (("setting", "roce_priority"),))] == 0
    assert not any(m == "nic_lldp_receive_state" for m, _ in g)  # collector off


def test_without_the_hosts_own_pfc_there_is_no_verdict() -> None:
    g = gauges(lldp=LldpPort("firmware_agent", (SWITCH,)))
    assert ("nic_lldp_peer_dcbx_mismatch", (("setting", "pfc"),)) not in g
    assert g[("nic_lldp_receive_state", (("state", "firmware_agent"),))] == 1


def test_counters() -> None:
    reading = Reading(device="ens1f0", time=1000.0, monotonic=1.0, netclass=NC,
                      lldp=LldpPort("ok", (), frames=7, malformed=2, dropped=40))
    counters = normalize(reading).counters
    assert counters[SeriesKey("nic_lldp_frames_total")].value == 7
    assert counters[SeriesKey("nic_lldp_malformed_frames_total")].value == 2
    assert counters[SeriesKey("nic_lldp_dropped_frames_total")].value == 40


def test_show_names_the_peers_setting_beside_the_ports_own() -> None:
    from nicwatch.cli.fabric_view import fabric_row

    lldp = LldpPort("ok", (SWITCH,))
    reading = Reading(device="ens1f0", time=1000.0, monotonic=1.0, netclass=NC, lldp=lldp,
                      dcb_pfc=OWN_PFC, dcb_qos=OWN_QOS)
    assert fabric_row(normalize(reading)) == [
        "ens1f0", "ok", "leaf1 Ethernet12 (chassis 00:1c:73:00:00:01)",
        "3 / 3,4 (lldp) MISMATCH", "3 / 4 (lldp) MISMATCH"]
    quiet = Reading(device="ens1f0", time=1000.0, monotonic=1.0, netclass=NC,
                    lldp=LldpPort("firmware_agent", firmware_detail="dcbx=lld_managed"))
    assert fabric_row(normalize(quiet)) == [
        "ens1f0", "firmware_agent (dcbx=lld_managed)", "none yet (LLDP agents send every 30s)",
        "- / -", "- / -"]
    assert fabric_row(normalize(Reading(device="ens1f0", time=1.0, monotonic=1.0,
                                        netclass=NC))) is None


def test_show_prints_the_link_peer_in_both_layouts() -> None:
    from nicwatch.cli.show import format_table

    reading = Reading(device="ens1f0", time=1000.0, monotonic=1.0, netclass=NC,
                      lldp=LldpPort("ok", (SWITCH,)), dcb_pfc=OWN_PFC, dcb_qos=OWN_QOS)
    sample = normalize(reading)
    wide = format_table([sample])
    assert "PFC HERE / PEER" in wide and "3 / 3,4 (lldp) MISMATCH" in wide
    narrow = format_table([sample], width=60)
    assert "    link peer  lldp ok" in narrow and "3 / 3,4 (lldp) MISMATCH" in narrow
