"""Which field a port trusts (nic_qos_trust_info) and where that was read, from dcbnl
replies built to the kernel's layout (tests/helpers/fixture_dcb.py) and the vendor mlx5
qos/trust file."""

from __future__ import annotations

from nicwatch.model import NetClass, Reading
from nicwatch.normalize import normalize
from nicwatch.normalize.gauges import trust_of
from nicwatch.sources.dcbnl import qos_from_reply

from fixture_dcb import SEL_DSCP, SEL_PCP, app_table, apptrust, ieee_reply, roce_reply


def trust_series(qos_reply: bytes | None, mlx5_trust: str | None = None) -> dict[str, str]:
    nc = NetClass("sw0p1", 3, None, "up", 1500, None, None, True, None, None, None, None,
                  None, "sparx5")
    qos = None if qos_reply is None else qos_from_reply(qos_reply)
    sample = normalize(Reading("sw0p1", 0, 0, nc, dcb_qos=qos, mlx5_trust=mlx5_trust))
    (labels,) = [dict(k.labels) for k in sample.gauges if k.metric == "nic_qos_trust_info"]
    return labels


def test_an_empty_app_trust_table_trusts_nothing():
    """dcbnl_getapptrust() succeeding with 0 selectors (`dcb apptrust set dev X order` with
    none) gives an empty DCB_ATTR_DCB_APP_TRUST_TABLE: neither DSCP nor PCP picks the
    priority. It read as pcp (or dscp, from the APP table) before."""
    raw = ieee_reply("sw0p1", app_table((SEL_DSCP, 2, 10)), apptrust())
    assert qos_from_reply(raw).apptrust == ()
    assert trust_series(raw) == {"trust": "none", "source": "dcbnl_apptrust"}


def test_the_app_trust_table_wins_over_the_app_table():
    raw = ieee_reply("sw0p1", app_table((SEL_DSCP, 2, 10)), apptrust(SEL_PCP, SEL_DSCP))
    assert trust_series(raw) == {"trust": "pcp", "source": "dcbnl_apptrust"}


def test_the_vendor_mlx5_file_wins_over_dscp_entries_but_not_over_app_trust():
    """mlnx_qos takes /sys/class/net/<if>/qos/trust where it exists and the DSCP entries of
    the APP table only where it does not; a driver's own app-trust table is still first."""
    rocev2 = roce_reply("sw0p1")  # DSCP entries 26 -> 3, 48 -> 6
    assert trust_series(rocev2, mlx5_trust="pcp") == {"trust": "pcp", "source": "mlx5_sysfs"}
    assert trust_series(rocev2) == {"trust": "dscp", "source": "dcbnl_app_table"}
    no_dscp = ieee_reply("sw0p1", app_table((SEL_PCP, 4, 0)))
    assert trust_series(no_dscp) == {"trust": "pcp", "source": "dcbnl_app_table"}
    trusting = ieee_reply("sw0p1", apptrust(SEL_DSCP))
    assert trust_series(trusting, mlx5_trust="pcp")["source"] == "dcbnl_apptrust"
    # the vendor file alone (a driver answering dcbnl with EOPNOTSUPP): still known
    assert trust_series(None, mlx5_trust="dscp") == {"trust": "dscp", "source": "mlx5_sysfs"}


def test_no_dcb_and_no_vendor_file_is_absent():
    assert trust_of(None, None) is None
