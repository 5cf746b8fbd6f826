"""Deployment files: the systemd unit (systemd-analyze verify, exposure at most 2.0, and the
daemon serving for real under the unit's identity restrictions), the Kubernetes manifests
(valid against the Kubernetes schema with kubernetes-validate, and the DaemonSet's shape),
and the plain Prometheus example (promtool check config)."""

from __future__ import annotations

import copy
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from fixture_devlink import kernel_has_devlink
from hostd import AS_NOBODY
from netns import make_veth_pair, ns_sh
from paths import REPO
from promtext import parse_exposition, series

UNIT = REPO / "systemd" / "nicwatch.service"
SOCKET_UNIT = REPO / "systemd" / "nicwatch.socket"
SOCKET_DROP_IN = REPO / "systemd" / "nicwatch.service.d" / "socket-activation.conf"
KUBERNETES = REPO / "deploy" / "kubernetes"
KUBERNETES_VERSIONS = ("1.29.0", "1.37.0")  # oldest still common, newest the validator knows
OPERATOR_KINDS = {"ServiceMonitor", "PrometheusRule"}  # CRDs: not in the Kubernetes schema
NICWATCH = Path(sys.executable).parent / "nicwatch"
MAX_EXPOSURE = 2.0
NOBODY = 65534
PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN = 65, 1


def unit_for_this_machine(tmp_path: Path, text: str | None = None) -> Path:
    """The unit with ExecStart pointing at this checkout's nicwatch, so verify can check it."""
    text = (text or UNIT.read_text()).replace("ExecStart=/usr/bin/nicwatch",
                                               f"ExecStart={NICWATCH}")
    path = tmp_path / "nicwatch.service"
    path.write_text(text)
    return path


def socket_units_for_this_machine(tmp_path: Path, drop_in: str | None = None) -> list[Path]:
    """nicwatch.socket, nicwatch.service and its socket-activation drop-in, in one directory
    (systemd-analyze verify reads drop-ins next to the unit), ExecStart made local."""
    drop_in = (drop_in or SOCKET_DROP_IN.read_text()).replace(
        "ExecStart=/usr/bin/nicwatch", f"ExecStart={NICWATCH}")
    (tmp_path / "nicwatch.service.d").mkdir()
    (tmp_path / "nicwatch.service.d" / SOCKET_DROP_IN.name).write_text(drop_in)
    shutil.copy(SOCKET_UNIT, tmp_path / SOCKET_UNIT.name)
    return [tmp_path / SOCKET_UNIT.name, unit_for_this_machine(tmp_path)]


def exposure(path: Path) -> float:
    r = subprocess.run(["systemd-analyze", "security", "--offline=true", str(path)],
                       check=False, capture_output=True, text=True)
    match = re.search(rf"Overall exposure level for {path.name}: ([0-9.]+)", r.stdout)
    assert match, r.stdout + r.stderr
    return float(match.group(1))


def directives(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        if "=" in line and not line.startswith("#"):
            key, value = line.split("=", 1)
            out.setdefault(key.strip(), []).append(value.strip())
    return out


def test_systemd_unit_verifies(tmp_path: Path) -> None:
    r = subprocess.run(["systemd-analyze", "verify", str(unit_for_this_machine(tmp_path))],
                       check=False, capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout == "" and r.stderr == "", r.stdout + r.stderr


def test_systemd_verify_reports_a_bad_directive(tmp_path: Path) -> None:
    broken = UNIT.read_text().replace("ProtectSystem=strict", "ProtectSystem=stricter")
    r = subprocess.run(["systemd-analyze", "verify", str(unit_for_this_machine(tmp_path, broken))],
                       check=False, capture_output=True, text=True)
    assert "Failed to parse protect system value" in r.stderr


def test_socket_unit_and_drop_in_verify(tmp_path: Path) -> None:
    r = subprocess.run(["systemd-analyze", "verify", *map(str, socket_units_for_this_machine(
        tmp_path))], check=False, capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout == "" and r.stderr == "", r.stdout + r.stderr


@pytest.mark.parametrize(("change", "message"), [
    (("Requires=nicwatch.socket", "Requires=nicwatch-typo.socket"),
     "Unit nicwatch-typo.socket not found"),
    (("[Service]", "[Service]\nExecStartt=/bin/true"), "Unknown key 'ExecStartt'"),
])
def test_socket_verify_reports_a_broken_drop_in(tmp_path: Path, change: tuple[str, str],
                                                message: str) -> None:
    units = socket_units_for_this_machine(tmp_path, SOCKET_DROP_IN.read_text().replace(*change))
    r = subprocess.run(["systemd-analyze", "verify", *map(str, units)], check=False,
                       capture_output=True, text=True)
    assert message in r.stderr


def test_socket_unit_pairs_with_the_service() -> None:
    sock, drop_in = directives(SOCKET_UNIT.read_text()), directives(SOCKET_DROP_IN.read_text())
    assert sock["ListenStream"] == ["10847"] and sock["WantedBy"] == ["sockets.target"]
    assert drop_in["Requires"] == drop_in["After"] == [SOCKET_UNIT.name]
    assert drop_in["ExecStart"][0] == ""  # replaces the service's command, does not add one
    assert drop_in["ExecStart"][1] == (directives(UNIT.read_text())["ExecStart"][0]
                                       + " --web.systemd-socket")


# Socket activation without systemd: a listening socket as fd 3, LISTEN_FDS=1 and
# LISTEN_PID set to the pid that execs nicwatch, exactly what systemd's exec does.
LAUNCHER = """\
import os, sys
os.dup2(int(sys.argv[1]), 3)
os.environ.update(LISTEN_FDS="1", LISTEN_PID=str(os.getpid()))
os.execv(sys.argv[2], sys.argv[2:])
"""


def test_socket_activation_serves_on_the_passed_socket(tmp_path: Path) -> None:
    """The drop-in's command, started the way systemd starts it for nicwatch.socket, serves
    /metrics on the passed socket and never binds its configured listen address."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        unused = probe.getsockname()[1]  # the config's listen address: must stay unbound
    config = tmp_path / "nicwatch.toml"
    config.write_text(f'interval = "1s"\n[web]\nlisten_address = "127.0.0.1:{unused}"\n'
                      f'[path]\nsysfs = "{REPO / "tests/fixtures/sysfs/virtio-no-pcie"}"\n'
                      f'[state]\nfile = "{tmp_path / "identity.json"}"\n'
                      '[log]\nformat = "json"\n')
    argv = shlex.split(directives(SOCKET_DROP_IN.read_text())["ExecStart"][1])
    argv = [str(NICWATCH) if a == "/usr/bin/nicwatch" else
            f"--config={config}" if a.startswith("--config=") else a for a in argv]
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    daemon = subprocess.Popen([sys.executable, "-c", LAUNCHER, str(listener.fileno()), *argv],
                              pass_fds=[listener.fileno()], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    listener.close()  # only the daemon holds it now
    try:
        body, deadline = "", time.monotonic() + 20
        while time.monotonic() < deadline and daemon.poll() is None and \
                "nicwatch_polls_total 2" not in body:
            time.sleep(0.2)
            body = subprocess.run(["curl", "-sf", f"http://127.0.0.1:{port}/metrics"],
                                  capture_output=True, text=True, check=False).stdout
        refused = subprocess.run(["curl", "-s", f"http://127.0.0.1:{unused}/metrics"],
                                 capture_output=True, check=False).returncode
    finally:
        daemon.terminate()
        _, err = daemon.communicate(timeout=10)
    assert daemon.returncode == 0, err
    metrics = parse_exposition(body)
    assert metrics[series("nicwatch_polls_total")] >= 2
    (info,) = [dict(labels) for name, labels in metrics if name == "nic_info"]
    assert (info["device"], info["driver"]) == ("eth0", "virtio_net")  # the fixture's port
    assert refused == 7  # curl: connection refused
    (serving,) = [json.loads(line) for line in err.splitlines() if '"serving"' in line]
    assert serving["address"] == f"systemd socket, port {port}"
    # the sources it reads; devlink only where the kernel has the family
    assert "dcbnl" in serving["sources"]
    assert ("devlink" in serving["sources"]) == kernel_has_devlink()


@pytest.mark.parametrize(("env", "message"), [
    ({}, "--web.systemd-socket: no sockets from systemd (LISTEN_PID is not this process)"),
    ({"LISTEN_FDS": "x"}, "--web.systemd-socket: LISTEN_FDS is 'x', not a number of sockets"),
    ({"LISTEN_FDS": "0"}, "--web.systemd-socket: LISTEN_FDS is '0', not a number of sockets"),
])
def test_systemd_socket_without_sockets_is_one_line_exit_2(tmp_path: Path, env: dict,
                                                           message: str) -> None:
    code = ("import os, sys\n"
            "os.environ.update(LISTEN_PID=str(os.getpid()), **{k: v for k, v in "
            f"{env!r}.items()}})\n" if env else "import sys\n") + (
            "from nicwatch.cli.main import main\n"
            f"sys.exit(main(['serve', '--web.systemd-socket', '--state.file={tmp_path}/s.json',"
            f" '--path.sysfs={REPO / 'tests/fixtures/sysfs/virtio-no-pcie'}']))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       check=False, env={k: v for k, v in os.environ.items()
                                         if not k.startswith("LISTEN_")})
    assert r.returncode == 2
    assert r.stderr.splitlines()[-1] == f"nicwatch: error: {message}"


def test_systemd_exposure_is_at_most_2(tmp_path: Path) -> None:
    assert exposure(unit_for_this_machine(tmp_path)) <= MAX_EXPOSURE
    bare = tmp_path / "bare.service"
    bare.write_text(f"[Service]\nExecStart={NICWATCH} serve\n")
    assert exposure(bare) > 9  # what the same daemon scores without the sandbox


def test_module_collector_drop_in_adds_only_cap_net_admin_and_stays_under_2(tmp_path: Path) -> None:
    drop_in = REPO / "systemd" / "nicwatch.service.d" / "module-collector.conf"
    assert directives(drop_in.read_text()) == {
        "CapabilityBoundingSet": ["CAP_NET_ADMIN"], "AmbientCapabilities": ["CAP_NET_ADMIN"],
        "PrivateUsers": ["no"]}
    unit = unit_for_this_machine(tmp_path)
    without = exposure(unit)
    (tmp_path / "nicwatch.service.d").mkdir()
    shutil.copy(drop_in, tmp_path / "nicwatch.service.d" / drop_in.name)
    r = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    # The numbers docs/optics.md and the drop-in quote.
    assert (without, exposure(unit)) == (1.3, 1.7)


def test_systemd_unit_runs_unprivileged_in_the_host_network() -> None:
    d = directives(UNIT.read_text())
    assert d["DynamicUser"] == ["yes"] and d["CapabilityBoundingSet"] == [""]
    assert d["AmbientCapabilities"] == [""] and d["NoNewPrivileges"] == ["yes"]
    assert d["ProtectSystem"] == ["strict"] and d["StateDirectory"] == ["nicwatch"]
    assert d["Type"] == ["notify"] and "WatchdogSec" in d
    assert "PrivateNetwork" not in d  # ethtool and netlink need the host's namespace
    assert set(d["RestrictAddressFamilies"][0].split()) == {"AF_UNIX", "AF_INET", "AF_INET6",
                                                             "AF_NETLINK"}


def test_daemon_serves_as_nobody_without_capabilities() -> None:
    """What the unit promises, for real: nicwatch serve on a veth in a test namespace as uid
    65534 with every capability dropped, no_new_privs and write-execute memory refused
    (the kernel's PR_SET_MDWE, as MemoryDenyWriteExecute=) reads driver info, statistics
    (ioctl), channels (netlink) and link state without a single source error."""
    state = Path(tempfile.mkdtemp(prefix="nicwatch-state-"))  # pytest's tmp_path is root-only
    shutil.chown(state, NOBODY, NOBODY)
    pair = make_veth_pair(subnet=50)
    port = 10847
    code = (
        "import ctypes, sys\n"
        f"assert ctypes.CDLL(None).prctl({PR_SET_MDWE}, {PR_MDWE_REFUSE_EXEC_GAIN}, 0, 0, 0) == 0\n"
        "from nicwatch.cli.main import main\n"
        f"sys.exit(main(['serve', '--interval=1s', '--web.listen-address=127.0.0.1:{port}',\n"
        f"               '--interfaces.include={pair.a}', '--state.file={state}/identity.json',\n"
        "               '--collector.raw=true', '--log.format=json']))\n")
    daemon = subprocess.Popen(
        ["ip", "netns", "exec", pair.ns_a, *AS_NOBODY[:3], "setpriv", f"--reuid={NOBODY}",
         f"--regid={NOBODY}",
         "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--",
         sys.executable, "-c", code],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        body = ""
        deadline = time.monotonic() + 20
        while (time.monotonic() < deadline and daemon.poll() is None
               and "nicwatch_polls_total 2" not in body):
            time.sleep(0.3)
            r = ns_sh(pair.ns_a, "curl", "-sf", f"http://127.0.0.1:{port}/metrics", check=False)
            body = r.stdout
        metrics = parse_exposition(body)
        # ip netns exec and setpriv exec in place: the pid is the daemon's.
        status = Path(f"/proc/{daemon.pid}/status").read_text() if daemon.poll() is None else ""
    finally:
        daemon.terminate()
        _, err = daemon.communicate(timeout=10)
        pair.delete()
        shutil.rmtree(state)
    assert daemon.returncode == 0, err
    assert re.search(rf"^Uid:\s+{NOBODY}\s+{NOBODY}\s+{NOBODY}\s+{NOBODY}$", status, re.MULTILINE)
    assert re.search(r"^CapEff:\s+0+$", status, re.MULTILINE)
    assert re.search(r"^CapBnd:\s+0+$", status, re.MULTILINE)
    assert re.search(r"^NoNewPrivs:\s+1$", status, re.MULTILINE)
    (info,) = [dict(labels) for name, labels in metrics if name == "nic_info"]
    assert (info["device"], info["driver"], info["driver_version"]) == (pair.a, "veth", "1.0")
    assert metrics[series("nic_link_up", device=pair.a)] == 1  # sysfs
    assert metrics[series("nic_channels", device=pair.a, type="rx")] == 1  # ethtool netlink
    assert series("nic_driver_stat_value", device=pair.a, stat="peer_ifindex") in metrics  # GSTATS
    assert not [k for k in metrics if k[0] == "nicwatch_source_errors_total"], err


# ------------------------------------------------------------------------------ Kubernetes


def manifests() -> list[tuple[str, dict]]:
    return [(path.name, doc) for path in sorted(KUBERNETES.glob("*.yaml"))
            if path.name != "kustomization.yaml"
            for doc in yaml.safe_load_all(path.read_text()) if doc]


def daemonset() -> dict:
    return next(doc for _, doc in manifests() if doc["kind"] == "DaemonSet")


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_manifests_are_valid_kubernetes(version: str) -> None:
    kinds = set()
    for name, doc in manifests():
        kinds.add(doc["kind"])
        if doc["kind"] in OPERATOR_KINDS:
            assert doc["apiVersion"] == "monitoring.coreos.com/v1", name
            continue
        kubernetes_validate.validate(doc, version, strict=True)
    assert kinds == {"Namespace", "ConfigMap", "DaemonSet", "Service", *OPERATOR_KINDS}


def test_validator_rejects_a_misspelt_field() -> None:
    ds = copy.deepcopy(daemonset())
    mount = ds["spec"]["template"]["spec"]["containers"][0]["volumeMounts"][0]
    mount["readonly"] = mount.pop("readOnly")
    with pytest.raises(kubernetes_validate.ValidationError, match="readonly"):
        kubernetes_validate.validate(ds, KUBERNETES_VERSIONS[-1], strict=True)


def test_daemonset_has_host_network_and_nothing_else() -> None:
    pod = daemonset()["spec"]["template"]["spec"]
    assert pod["hostNetwork"] is True
    assert not pod.get("hostPID") and not pod.get("hostIPC")
    assert pod["tolerations"] == [{"operator": "Exists"}]
    assert pod["automountServiceAccountToken"] is False
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (container,) = pod["containers"]
    sc = container["securityContext"]
    assert sc["capabilities"] == {"drop": ["ALL"]} and sc["privileged"] is False
    assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
    host_paths = {v["name"]: v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v}
    assert host_paths == {"sys": "/sys"}
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    assert mounts["sys"]["readOnly"] is True
    assert f"--path.sysfs={mounts['sys']['mountPath']}" in container["args"]
    assert "--web.listen-address=[$(HOST_IP)]:10847" in container["args"]
    assert {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in container["env"]} == {
        "HOST_IP": "status.hostIP"}


def test_image_is_a_placeholder_that_says_so() -> None:
    """No public image exists: the manifest names one under example.com (reserved, RFC 2606,
    never a registry) and says it is the operator's to build; the image the Containerfile
    builds runs what the DaemonSet runs, as the user it runs as."""
    text = (KUBERNETES / "daemonset.yaml").read_text()
    (container,) = daemonset()["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "registry.example.com/nicwatch:0.1.0"
    assert "# PLACEHOLDER: no public nicwatch image exists." in text
    assert "deploy/container/build" in text
    containerfile = (REPO / "deploy/container/Containerfile").read_text()
    assert 'ENTRYPOINT ["nicwatch"]' in containerfile and container["command"] == ["nicwatch"]
    assert "USER 65534:65534" in containerfile
    pod = daemonset()["spec"]["template"]["spec"]["securityContext"]
    assert pod["runAsUser"] == pod["runAsGroup"] == NOBODY
    other = [p.name for p in KUBERNETES.glob("*.yaml") if "image:" in p.read_text()]
    assert other == ["daemonset.yaml"]


def test_service_monitor_reaches_the_daemonset() -> None:
    docs = {doc["kind"]: doc for _, doc in manifests()}
    ds, svc, sm = docs["DaemonSet"], docs["Service"], docs["ServiceMonitor"]
    pod_labels = ds["spec"]["template"]["metadata"]["labels"]
    assert svc["spec"]["selector"].items() <= pod_labels.items()
    assert sm["spec"]["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items()
    container_ports = {p["name"]: p["containerPort"] for p in
                       ds["spec"]["template"]["spec"]["containers"][0]["ports"]}
    (svc_port,) = svc["spec"]["ports"]
    assert container_ports[svc_port["targetPort"]] == svc_port["port"] == 10847
    assert [e["port"] for e in sm["spec"]["endpoints"]] == [svc_port["name"]]
    # Prometheus names the job after the service; NicwatchDown selects that job.
    thresholds = (REPO / "deploy/prometheus/thresholds.toml").read_text()
    assert f"nicwatch_selector = 'job=\"{svc['metadata']['name']}\"'" in thresholds


def test_kustomization_lists_every_manifest() -> None:
    kustomization = yaml.safe_load((KUBERNETES / "kustomization.yaml").read_text())
    files = {p.name for p in KUBERNETES.glob("*.yaml")} - {"kustomization.yaml"}
    assert sorted(kustomization["resources"]) == sorted(files)


def test_configmap_is_a_valid_nicwatch_config(tmp_path: Path) -> None:
    cm = next(doc for _, doc in manifests() if doc["kind"] == "ConfigMap")
    path = tmp_path / "nicwatch.toml"
    path.write_text(cm["data"]["nicwatch.toml"])
    r = subprocess.run([str(NICWATCH), "show", f"--config={path}", "--path.sysfs",
                        str(REPO / "tests/fixtures/sysfs/virtio-no-pcie"), "--json"],
                       check=False, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert [s["device"] for s in json.loads(r.stdout)] == ["eth0"]


def test_prometheus_example_config_is_valid() -> None:
    r = subprocess.run(["promtool", "check", "config", "prometheus.yml"], check=False,
                       capture_output=True, text=True, cwd=REPO / "deploy" / "prometheus")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "SUCCESS: 1 rule files found" in r.stdout
