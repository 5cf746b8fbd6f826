"""Link physics from ethtool netlink, decoded from replies built in the kernel's layout
(fixture_ethtool's encoder; attribute numbers from include/uapi/linux/
ethtool_netlink_generated.h, 6.18): per-lane corrected bits, the FEC histogram
(FEC_STAT_HIST, one nest per bin), LINKSTATE_GET's extended state and down count, and the
link mode's lanes. No NIC here fills them (veth has no FEC, no extended state)."""

from __future__ import annotations

import pytest

from nicwatch.model import LinkState
from nicwatch.sources import ethtool_netlink as en

from fixture_ethtool import attrs, header, nest, u32
from fixture_linkphysics import (
    FEC_STAT_HIST,
    HIST_BIN_HIGH,
    HIST_BIN_LOW,
    decoded,
    fec_reply,
    hist_bin,
    linkmodes_reply,
    linkstate_reply,
)


def test_per_lane_corrected_bits_and_histogram_bins_with_and_without_lanes():
    reply = fec_reply(7, (10, 0, 5, 0, 0, 0, 2000, 0), uncorr=3, bins=(
        hist_bin(0, 0, 1_000_000),
        hist_bin(1, 3, 5_000, per_lane=(4_000, 1_000)),
        hist_bin(13, 15, 7),
    ))
    stats = en.fec_part(reply)["std_stats"]
    assert stats["fec.corrected_bits"] == 2015  # entry 0: the kernel's sum of the lanes
    assert [stats[f"fec.corrected_bits.lane{n}"] for n in range(8)] == [
        10, 0, 5, 0, 0, 0, 2000, 0]
    assert stats["fec.uncorrectable_blocks"] == 3
    assert stats["fec.hist.0_0"] == 1_000_000
    assert (stats["fec.hist.1_3"], stats["fec.hist.1_3.lane0"],
            stats["fec.hist.1_3.lane1"]) == (5_000, 4_000, 1_000)
    assert stats["fec.hist.13_15"] == 7
    assert "fec.hist.0_0.lane0" not in stats and "fec.hist.13_15.lane0" not in stats


def test_a_histogram_bin_without_its_value_is_a_parse_error():
    broken = nest(FEC_STAT_HIST, u32(HIST_BIN_LOW, 1), u32(HIST_BIN_HIGH, 1))
    reply = fec_reply(7, (1,), bins=(broken,))
    with pytest.raises(en.ParseError):
        en.fec_part(reply)


def test_a_bin_value_of_four_bytes_is_read_as_the_kernel_sends_small_uints():
    small = nest(FEC_STAT_HIST, u32(HIST_BIN_LOW, 2), u32(HIST_BIN_HIGH, 2), u32(4, 77))
    assert en.fec_part(fec_reply(7, (1,), bins=(small,)))["std_stats"]["fec.hist.2_2"] == 77


@pytest.mark.parametrize(("state", "substate", "want"), [
    (3, 4, LinkState(False, "bad_signal_integrity", "serdes_alos")),
    (0, 1, LinkState(False, "autoneg", "no_partner_detected")),
    (2, 5, LinkState(False, "link_logical_mismatch", "rs_fec_is_not_locked")),
    (10, 1, LinkState(False, "module", "cmis_not_ready")),
    (4, None, LinkState(False, "no_cable", None)),
    (9, 0, LinkState(False, "overheat", None)),
    (42, 3, LinkState(False, "state_42", "substate_3")),
])
def test_linkstate_extended_state_names_follow_the_uapi_enums(state, substate, want):
    part = en.linkstate_part(linkstate_reply(7, False, state, substate, down_cnt=12))
    assert part["linkstate"] == want
    assert part["std_stats"] == {"linkstate.ext_down_cnt": 12}


def test_a_link_that_is_up_has_no_reason_and_a_driver_without_a_down_count_none():
    part = en.linkstate_part(linkstate_reply(7, True))
    assert part["linkstate"] == LinkState(True, None, None)
    assert part["std_stats"] == {}


def test_lanes_from_linkmodes_and_absent_when_the_kernel_omits_them():
    assert en.lanes_part(linkmodes_reply(7, 400000, 8))["lanes"] == 8
    no_lanes = attrs(header(1, 7), u32(5, 400000))
    assert en.lanes_part(no_lanes)["lanes"] is None


def test_the_dumps_merge_into_one_info_per_interface():
    info = decoded({
        "FEC_GET": [fec_reply(7, (1, 2, 3, 4))],
        "LINKSTATE_GET": [linkstate_reply(7, False, 3, 1, down_cnt=2)],
        "LINKMODES_GET": [linkmodes_reply(7, 200000, 4)],
    })[7]
    assert info.lanes == 4
    assert info.linkstate == LinkState(False, "bad_signal_integrity",
                                       "large_number_of_physical_errors")
    assert info.std_stats["fec.corrected_bits.lane3"] == 4
    assert info.std_stats["linkstate.ext_down_cnt"] == 2
    assert info.fec is not None and info.fec.active == "rs"
