"""[fabric] role: nic_fabric_role_info on every port of the daemon, the label the fleet drift
rules group by (docs/fabric.md, "Fleet drift")."""

from hostd import host_daemon
from promtext import parse_exposition, series


def test_the_role_is_a_label_on_every_port(tmp_path):
    config = tmp_path / "nicwatch.toml"
    config.write_text('[fabric]\nrole = "gpu-backend"\n')
    with host_daemon("--interval=0.3s", f"--config={config}",
                     f"--state.file={tmp_path / 's.json'}") as d:
        m = parse_exposition(d.wait_for("nic_fabric_role_info"))
        devices = {dict(k[1]).get("device") for k in m if k[0] == "nic_mtu_bytes"}
        roles = {dict(k[1])["device"]: (dict(k[1])["role"], v)
                 for k, v in m.items() if k[0] == "nic_fabric_role_info"}
    assert devices and set(roles) == devices
    assert set(roles.values()) == {("gpu-backend", 1.0)}
    assert m[series("nic_fabric_role_info", device=sorted(devices)[0], role="gpu-backend")] == 1


def test_no_role_no_series(tmp_path):
    with host_daemon("--interval=0.3s", f"--state.file={tmp_path / 's.json'}") as d:
        body = d.wait_for("nic_mtu_bytes")
    assert "nic_fabric_role_info" not in body
