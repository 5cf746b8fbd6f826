"""soft-RoCE (rdma_rxe) over a netdevsim port: nicwatch finds the RDMA port of the netdev
`rdma -j link` names, reads it over the RDMA netlink family, and its counters equal
`rdma -j statistic show` (and the hw_counters files) idle and after real RDMA traffic, and
`nicwatch record -- ibv_rc_pingpong ...` (then perftest's ib_write_bw) reports the packets
the tool sent (tests/lab/guest/scenarios/rxe.py).

The sysfs fixture trees of tests/unit/sources/test_sysfs_infiniband.py stand for mlx5; here
the files are the kernel's own for a real RDMA device."""

from __future__ import annotations

from typing import Any

import pytest
from evidence import samples, show_values, snapshot_counter, snapshot_interface, value

RDMA = {"rdma_device": "rxe0", "port": "1"}
# nicwatch family <- rxe hw_counter (drivers/infiniband/sw/rxe/rxe_hw_counters.c; nicwatch's
# table is normalize/rdma.py RXE)
MAPPED = {"nic_rdma_tx_packets_total": "sent_pkts", "nic_rdma_rx_packets_total": "rcvd_pkts"}
# the rest of rxe's counters with a family of that meaning; any other is raw, by its name
# (nic_rdma_hw_stat_total{counter})
MEANINGS = {
    "nic_rdma_duplicate_requests_total": "duplicate_request",
    "nic_rdma_out_of_sequence_total": "out_of_seq_request",
    "nic_rdma_rnr_nak_retry_errors_total": "rcvd_rnr_err",
    "nic_rdma_packet_seq_errors_total": "rcvd_seq_err",
    "nic_rdma_req_transport_retries_exceeded_total": "retry_exceeded_err",
    "nic_rdma_req_rnr_retries_exceeded_total": "retry_rnr_exceeded_err",
    "nic_rdma_link_downed_total": "link_downed",
}
RAW = "nic_rdma_hw_stat_total"


def rdma_entry(show: list[dict[str, Any]], key: str = "rxe0/1") -> dict[str, Any]:
    """The RDMA port ``key`` of `nicwatch show --json` (an object with "rdma_port")."""
    for entry in show:
        if entry.get("rdma_port") == key:
            return entry
    raise AssertionError(f"`nicwatch show --json` has no RDMA port {key}: "
                         f"{[e.get('rdma_port', e['device']) for e in show]}")


@pytest.fixture(scope="module")
def ev(lab):
    return lab.scenario("rxe")


def _statistic(state: dict) -> dict:
    (entry,) = state["statistic"]
    assert (entry["ifname"], entry["port"]) == ("rxe0", 1)
    return entry


def test_rdma_port_is_found_on_the_netdev_rdma_link_names(ev):
    (port,) = ev["idle"]["link"]
    assert (port["ifname"], port["state"], port["netdev"]) == ("rxe0", "ACTIVE", ev["netdev"])
    m = samples(ev["metrics"])
    (info,) = [dict(lbl) for (name, lbl) in m if name == "nic_info"
               and dict(lbl)["device"] == ev["netdev"]]
    assert info["rdma_device"] == "rxe0" and info["driver"] == "netdevsim"


def test_idle_counters_equal_rdma_statistic(ev):
    kernel = _statistic(ev["idle"])
    assert kernel == _statistic(ev["idle_after"])
    m = samples(ev["metrics"])
    for family, counter in MAPPED.items():
        assert value(m, family, device=ev["netdev"], **RDMA) == kernel[counter]
    entry = rdma_entry(ev["show"])
    assert entry["device"] == ev["netdev"]
    for family, counter in MAPPED.items():
        assert show_values(entry, "counters", family) == {
            frozenset(RDMA.items()): kernel[counter]}
    # rxe has no IB PortCounters (no counters/ directory): no byte families, not zeros.
    assert value(m, "nic_rdma_tx_bytes_total", device=ev["netdev"], **RDMA) is None


@pytest.mark.parametrize("run", ["pingpong", "write_bw"])
def test_record_reports_the_packets_the_tool_sent(ev, run):
    recorded = ev[run]
    if run == "write_bw" and recorded["status"] != 0:
        # perftest times its report by the TSC and refuses to print one when the TSC does
        # not track wall time (r^2 < 0.9), as under a loaded emulator; the writes were made,
        # and `nicwatch record` passes the tool's status on.
        assert "Can't produce a report" in recorded["stdout"] + recorded["stderr"]
    else:
        assert recorded["status"] == 0 and recorded["server"]["status"] == 0, recorded["stderr"]
    before, after = _statistic(recorded["kernel_before"]), _statistic(recorded["kernel_after"])
    report = recorded["report"]
    assert report["exit_status"] == recorded["status"]
    assert report["command"] == recorded["client"]
    (interface,) = [i for i in report["interfaces"] if i["device"] == ev["netdev"]]
    rows = {row["family"]: row for row in interface["counters"]}
    for family, counter in MAPPED.items():
        (row,) = [r for name, r in rows.items() if name.startswith(family)]
        assert row["delta"] == after[counter] - before[counter], (family, row)
    sent = after["sent_pkts"] - before["sent_pkts"]
    if run == "pingpong":
        # Both ends are on rxe0 (loopback): each of the iterations is a send from each side.
        assert after["rdma_sends"] - before["rdma_sends"] >= 2 * ev["iters"]
        assert sent >= 2 * ev["iters"]
        assert f"{ev['iters']} iters in" in recorded["stdout"]
    else:
        assert sent >= 200  # 200 RDMA writes of 4 KiB at rxe's 1024-byte MTU: more packets
    assert after["rcvd_pkts"] - before["rcvd_pkts"] == sent  # loopback: all received


def test_snapshot_after_traffic_equals_rdma_statistic(ev):
    kernel = _statistic(ev["final"])
    interface = snapshot_interface(ev["snapshot"], ev["netdev"])
    for family, counter in MAPPED.items():
        assert snapshot_counter(interface, family, **RDMA) == kernel[counter]
    assert kernel["sent_pkts"] > 0


def rdma_netlink_counters(ev) -> dict[str, int]:
    """nicwatch's counters of rxe0/1 in `show --json`, by rxe's counter name (through
    MAPPED/MEANINGS, or the raw family's ``counter`` label), asserting that they were read
    from the RDMA netlink family (RDMA_NLDEV_CMD_STAT_GET, what `rdma statistic` reads)."""
    entry = rdma_entry(ev["show"])
    assert entry["source"] == "netlink", (entry["source"], entry["problems"])
    assert entry["skipped"] == {}
    names = {**MAPPED, **MEANINGS}
    got: dict[str, int] = {}
    for c in entry["counters"]:
        labels = dict(c["labels"])
        counter = labels.pop("counter", None) if c["metric"] == RAW else names.get(c["metric"])
        if counter is None:
            continue
        assert labels == RDMA, c
        assert counter not in got, f"{counter} in two families"
        got[counter] = c["value"]
    return got


def test_rdma_netlink_counters_equal_rdma_statistic(ev):
    got = rdma_netlink_counters(ev)
    kernel = {k: v for k, v in _statistic(ev["idle"]).items()
              if k not in ("ifname", "port") and isinstance(v, int)}
    assert kernel, _statistic(ev["idle"])
    # every counter `rdma statistic` shows, once, with its value: none lost, none invented
    assert got == kernel
    # the hw_counters files say the same (the fallback source)
    sysfs = {name: int(text) for name, text in ev["idle_sysfs"].items()}
    assert sysfs == kernel
    m = samples(ev["metrics"])
    assert value(m, "nicwatch_rdma_source", device="rxe0", source="netlink") == 1
    assert value(m, "nicwatch_rdma_source", device="rxe0", source="sysfs") in (None, 0)
