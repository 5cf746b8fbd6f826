"""Identity across restarts: the same permanent MAC at a new PCI address or name."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from nicwatch.collect import Collector
from nicwatch.consumers import identity
from nicwatch.consumers.identity import IdentityState, StateFileError

from fixture_ethtool import RecordedEthtool
from hostd import NICWATCH, host_daemon
from paths import TESTS
from promtext import parse_exposition, series

HERE = TESTS
SYSFS = HERE / "fixtures" / "sysfs"
PERM = "b8:3f:d2:a1:5c:2e"


def samples(scenario: Path, device: str):
    ethtool = RecordedEthtool({device: {"driver": "mlx5_core", "perm_address": PERM}})
    return Collector(scenario, ioctl=ethtool).poll().samples


def moved_tree(tmp_path: Path) -> Path:
    """The mlx5-rdma host after a reboot that renumbered the bus: the same card (same
    permanent MAC) is now at 0000:22:00.0 and its netdev is called enp34s0f0np0."""
    root = tmp_path / "sys"
    shutil.copytree(SYSFS / "mlx5-rdma", root, symlinks=True)
    old_dev = root / "devices/pci0000:20/0000:20:03.1/0000:21:00.0"
    new_dev = old_dev.with_name("0000:22:00.0")
    old_dev.rename(new_dev)
    (new_dev / "net/enp33s0f0np0").rename(new_dev / "net/enp34s0f0np0")
    (root / "class/net/enp33s0f0np0").unlink()
    (root / "class/net/enp34s0f0np0").symlink_to(
        "../../devices/pci0000:20/0000:20:03.1/0000:22:00.0/net/enp34s0f0np0")
    pci = root / "bus/pci/devices"
    (pci / "0000:21:00.0").unlink()
    (pci / "0000:22:00.0").symlink_to("../../../devices/pci0000:20/0000:20:03.1/0000:22:00.0")
    return root


def test_same_mac_at_a_new_address_and_name_is_counted_across_restarts(tmp_path):
    state_file = tmp_path / "state" / "identity.json"
    first = IdentityState(state_file)
    assert first.observe(samples(SYSFS / "mlx5-rdma", "enp33s0f0np0"), now=1.0) == []
    assert json.loads(state_file.read_text())["nics"][PERM]["pci_address"] == "0000:21:00.0"

    # A daemon restart after the reboot: a new IdentityState reads the file.
    second = IdentityState(state_file)
    moved = samples(moved_tree(tmp_path), "enp34s0f0np0")
    assert moved[0].identity.pci_address == "0000:22:00.0"
    changes = second.observe(moved, now=2.0)
    assert {(c.kind, c.old, c.new) for c in changes} == {
        ("pci_address", "0000:21:00.0", "0000:22:00.0"), ("name", "enp33s0f0np0", "enp34s0f0np0")}
    fam = second.family(moved)
    assert dict(fam.series) == {(("device", "enp34s0f0np0"), ("kind", "pci_address")): 1.0,
                                (("device", "enp34s0f0np0"), ("kind", "name")): 1.0}
    # Seen again unchanged: no new change; the count survives yet another restart.
    assert IdentityState(state_file).observe(moved, now=3.0) == []
    assert dict(IdentityState(state_file).family(moved).series)[
        (("device", "enp34s0f0np0"), ("kind", "pci_address"))] == 1.0


@pytest.mark.parametrize("content, needle", [(b"{", "not valid JSON"),
                                             (b'{"version": 99, "nics": {}}', "version 1")])
def test_bad_state_file_is_a_clear_error(tmp_path, content, needle):
    f = tmp_path / "identity.json"
    f.write_bytes(content)
    with pytest.raises(StateFileError, match=needle):
        IdentityState(f)
    r = subprocess.run([NICWATCH, "serve",
                        f"--state.file={f}", "--web.listen-address=127.0.0.1:0"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and str(f) in r.stderr and "Traceback" not in r.stderr


def test_daemon_exports_identity_changes(tmp_path):
    """The real daemon on this host: eth0 (virtio) has a permanent MAC and a PCI function; a
    state file that remembers it at another address yields a counted change."""
    from nicwatch.sources.ethtool_ioctl import EthtoolIoctl
    perm = EthtoolIoctl().perm_address("eth0")
    state = tmp_path / "identity.json"
    state.write_text(json.dumps({"version": 1, "nics": {perm: {
        "pci_address": "0000:99:00.0", "name": "eth0", "first_seen": 0, "changes": {}}}}))
    with host_daemon("--interval=0.3s", f"--state.file={state}") as d:
        m = parse_exposition(d.wait_for("nic_identity_changes_total"))
        assert m[series("nic_identity_changes_total", device="eth0", kind="pci_address")] == 1
        assert m[series("nic_identity_changes_total", device="eth0", kind="name")] == 0
    err = d.stderr
    assert '"event": "nic_identity_changed"' in err and "0000:99:00.0" in err


def test_systemd_state_directory_comes_first(tmp_path, monkeypatch):
    monkeypatch.setattr(identity, "SYSTEM_STATE_DIRECTORY", tmp_path / "var-lib-nicwatch")
    env = {"STATE_DIRECTORY": f"{tmp_path / 'sd'}:{tmp_path / 'other'}", "HOME": str(tmp_path)}
    assert identity.default_state_file(env) == (tmp_path / "sd" / "identity.json", [])
    path, passed = identity.default_state_file({**env, "STATE_DIRECTORY": "/proc/nicwatch"})
    assert path == tmp_path / "var-lib-nicwatch" / "identity.json"
    assert passed and passed[0].startswith("/proc/nicwatch: ")
    env = {"HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "xdg")}
    monkeypatch.setattr(identity, "SYSTEM_STATE_DIRECTORY", Path("/proc/nicwatch"))
    assert identity.default_state_file(env)[0] == tmp_path / "xdg" / "nicwatch" / "identity.json"
    del env["XDG_STATE_HOME"]
    assert identity.default_state_file(env)[0] == (
        tmp_path / ".local" / "state" / "nicwatch" / "identity.json")

BAD_ENTRIES = {
    "not-a-mac": {"pci_address": "0000:01:00.0", "name": "eth9", "first_seen": 0, "changes": {}},
    "02:00:00:00:00:01": "a string",
    "02:00:00:00:00:02": {"pci_address": 7, "name": "eth9", "first_seen": 0, "changes": {}},
    "02:00:00:00:00:03": {"pci_address": "0000:01:00.0", "first_seen": 0, "changes": {}},
    "02:00:00:00:00:04": {"pci_address": "0000:01:00.0", "name": "x" * 40, "first_seen": 0,
                          "changes": {}},
    "02:00:00:00:00:05": {"pci_address": "0000:01:00.0", "name": "eth9", "first_seen": "now",
                          "changes": {}},
    "02:00:00:00:00:06": {"pci_address": "0000:01:00.0", "name": "eth9", "first_seen": 0},
    "02:00:00:00:00:07": {"pci_address": "0000:01:00.0", "name": "eth9", "first_seen": 0,
                          "changes": {"pci_address": "many"}},
    "02:00:00:00:00:09": {"pci_address": "0000:01:00.0", "name": "eth9", "first_seen": 0,
                          "changes": {"name": -1, "colour": 1}},
    "02:00:00:00:00:0a": [[[[]]]],
}


def test_state_file_with_wrong_entries_drops_them_and_keeps_polling(tmp_path):
    """Valid JSON of the right version whose entries are wrong once passed the start-up
    check and then failed every poll (503 forever). Each bad entry is dropped with one
    warning naming why; the good entry keeps working; the file is rewritten without them."""
    from nicwatch.sources.ethtool_ioctl import EthtoolIoctl
    perm = EthtoolIoctl().perm_address("eth0")
    state = tmp_path / "identity.json"
    good = {"pci_address": "0000:99:00.0", "name": "eth0", "first_seen": 0,
            "changes": {"name": 2}}
    state.write_text(json.dumps({"version": 1, "nics": {perm: good, **BAD_ENTRIES}}))
    with host_daemon("--interval=0.2s", f"--state.file={state}") as d:
        body = d.wait_for("nicwatch_polls_total 3")
        m = parse_exposition(body)
        # The good entry: eth0 seen at another address than remembered, counted.
        assert m[series("nic_identity_changes_total", device="eth0", kind="pci_address")] == 1
        assert m[series("nic_identity_changes_total", device="eth0", kind="name")] == 2
        readyz = subprocess.run(["curl", "-s", f"http://127.0.0.1:{d.port}/readyz"],
                                capture_output=True, text=True).stdout
        assert readyz == "ready\n"
    lines = [json.loads(line) for line in d.stderr.splitlines() if line.startswith("{")]
    dropped = [e for e in lines if e["event"] == "state_file_entry_dropped"]
    assert sorted(e["key"] for e in dropped) == sorted(BAD_ENTRIES)
    assert all(e["level"] == "warning" and e["problem"] for e in dropped)
    assert not [e for e in lines if e["event"] in ("poll_failed", "state_file_failed")]
    assert set(json.loads(state.read_text())["nics"]) == {perm}


def test_many_bad_entries_log_a_summary(tmp_path):
    state = tmp_path / "identity.json"
    state.write_text(json.dumps({"version": 1, "nics": {f"k{i}": None for i in range(500)}}))
    from structlog.testing import capture_logs
    with capture_logs() as logs:
        assert IdentityState(state).nics == {}
    assert [e["event"] for e in logs] == ["state_file_entry_dropped"] * 10 + [
        "state_file_entries_dropped"]
    assert logs[-1]["count"] == 500
