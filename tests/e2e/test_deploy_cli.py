"""`nicwatch deploy` from a real wheel: `pip wheel . --no-deps`, installed into a fresh
virtual environment, prints and writes the repository's deployment files byte for byte,
carries the LICENSE, and refuses bad use with one line and exit status 2."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from nicwatch.cli.deploy import DEPLOY_FILES

from paths import REPO

TREE_NICWATCH = Path(sys.executable).parent / "nicwatch"  # the editable install: the tree


class Installed:
    def __init__(self, wheel: Path, venv: Path) -> None:
        self.wheel, self.venv = wheel, venv
        self.nicwatch = venv / "bin" / "nicwatch"

    def run(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
        # Run from outside the repository, so nothing can be found relative to it.
        return subprocess.run([str(self.nicwatch), "deploy", *args], capture_output=True,
                              cwd=cwd or self.venv, check=False)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    tmp = tmp_path_factory.mktemp("wheel")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", str(REPO), "--no-deps", "-w", str(tmp / "dist")],
                   check=True, capture_output=True)
    (wheel,) = (tmp / "dist").glob("nicwatch-*.whl")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check",
                    "-q", "install", str(wheel)], check=True, capture_output=True)
    return Installed(wheel, venv)


def every_file() -> list[tuple[str, str, str]]:
    return [(kind, name, path) for kind, files in DEPLOY_FILES.items()
            for name, path in files.items()]


def test_wheel_carries_every_deploy_file_and_nothing_else(installed: Installed) -> None:
    with zipfile.ZipFile(installed.wheel) as z:
        shipped = {n.removeprefix("nicwatch/share/"): z.read(n) for n in z.namelist()
                   if n.startswith("nicwatch/share/")}
    assert shipped == {path: (REPO / path).read_bytes() for _, _, path in every_file()}


def test_installed_nicwatch_reads_its_own_package(installed: Installed) -> None:
    code = "from nicwatch.cli import deploy; print(deploy.source_root())"
    r = subprocess.run([str(installed.venv / "bin" / "python"), "-c", code], check=True,
                       capture_output=True, text=True, cwd=installed.venv)
    assert Path(r.stdout.strip()).is_relative_to(installed.venv), r.stdout


def test_wheel_carries_the_apache_license(installed: Installed) -> None:
    text = (REPO / "LICENSE").read_text()
    assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"]
    assert "END OF TERMS AND CONDITIONS" in text and "APPENDIX" in text
    with zipfile.ZipFile(installed.wheel) as z:
        (license_,) = [n for n in z.namelist() if n.endswith("/LICENSE")]
        assert z.read(license_) == (REPO / "LICENSE").read_bytes()
        (metadata,) = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
        assert "License: Apache-2.0" in z.read(metadata).decode()


@pytest.mark.parametrize("kind", DEPLOY_FILES)
def test_output_writes_the_repository_files(installed: Installed, kind: str,
                                            tmp_path: Path) -> None:
    out = tmp_path / "out" / kind  # created, parents too
    r = installed.run(kind, "--output", str(out))
    assert r.returncode == 0, r.stderr
    written = {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert written == {name: (REPO / path).read_bytes()
                       for name, path in DEPLOY_FILES[kind].items()}
    assert r.stdout.decode().splitlines() == [f"wrote {out / n}" for n in DEPLOY_FILES[kind]]
    assert all((out / n).stat().st_mode & 0o777 == 0o644 for n in DEPLOY_FILES[kind])


@pytest.mark.parametrize(("kind", "name", "path"), every_file())
def test_one_file_to_stdout(installed: Installed, kind: str, name: str, path: str) -> None:
    r = installed.run(kind, name)
    assert r.returncode == 0 and r.stderr == b""
    assert r.stdout == (REPO / path).read_bytes()


def test_a_kind_with_one_file_prints_it() -> None:
    r = subprocess.run([str(TREE_NICWATCH), "deploy", "rules"], capture_output=True,
                       check=False)
    assert r.returncode == 0  # this one from the source tree (editable install)
    assert r.stdout == (REPO / DEPLOY_FILES["rules"]["nicwatch-rules.yml"]).read_bytes()


def test_kubernetes_to_stdout_is_the_kustomization_as_one_stream(installed: Installed) -> None:
    r = installed.run("kubernetes")
    assert r.returncode == 0, r.stderr
    streamed = [doc for doc in yaml.safe_load_all(r.stdout) if doc]
    order = yaml.safe_load((REPO / "deploy/kubernetes/kustomization.yaml").read_text())
    expected = [doc for name in order["resources"]
                for doc in yaml.safe_load_all((REPO / "deploy/kubernetes" / name).read_text())
                if doc]
    assert streamed == expected and len(streamed) == len(order["resources"])
    for doc in streamed:
        if doc["apiVersion"] != "monitoring.coreos.com/v1":  # operator CRDs: not in the schema
            kubernetes_validate.validate(doc, "1.37.0", strict=True)


def test_output_replaces_existing_files_atomically(installed: Installed, tmp_path: Path) -> None:
    (tmp_path / "nicwatch.toml").write_text("stale\n")
    r = installed.run("config", "nicwatch.toml", "--output", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "nicwatch.toml").read_bytes() == (REPO / "deploy/nicwatch.toml").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nicwatch.toml"]  # no temp files


def test_every_deployment_file_in_the_tree_is_shipped() -> None:
    tree = {str(p.relative_to(REPO)) for pattern in (
        "systemd/**/*", "grafana/*.json", "deploy/kubernetes/*.yaml", "deploy/*.toml",
        "deploy/prometheus/*.yml") for p in REPO.glob(pattern) if p.is_file()}
    assert tree == {path for _, _, path in every_file()}


@pytest.mark.parametrize(("args", "message"), [
    (("bogus",), "argument KIND: invalid choice: 'bogus' (choose from 'systemd', 'rules', "
                 "'dashboards', 'kubernetes', 'config')"),
    (("systemd",), "deploy systemd: 4 files (nicwatch.service, nicwatch.socket, "
                   "nicwatch.service.d/socket-activation.conf, "
                   "nicwatch.service.d/module-collector.conf); name one to print it, or "
                   "write them all with --output DIR"),
    (("dashboards", "nicwatch.json"), "deploy dashboards: no file 'nicwatch.json' (files: "
                                      "nicwatch-fleet.json, nicwatch-host.json)"),
    ((), "deploy: name a kind (systemd, rules, dashboards, kubernetes, config); --list shows "
         "the files"),
    (("rules", "--output", "/etc/hostname"), "deploy: --output /etc/hostname: not a directory"),
    (("--list", "rules"), "deploy: --list takes no kind, file or --output"),
])
def test_bad_use_is_one_line_and_exit_2(args: tuple[str, ...], message: str) -> None:
    r = subprocess.run([str(TREE_NICWATCH), "deploy", *args], capture_output=True, text=True,
                       check=False)
    assert (r.returncode, r.stdout, r.stderr) == (2, "", f"nicwatch: error: {message}\n")


def test_unwritable_output_is_one_line_and_exit_1() -> None:
    """A directory that cannot be created (sysfs refuses mkdir even to root, so the test
    needs no other user, whose view of a root-only checkout would fail it first)."""
    target = Path("/sys/nicwatch-deploy-test")
    r = subprocess.run([str(TREE_NICWATCH), "deploy", "rules", "--output", str(target)],
                       capture_output=True, text=True, check=False)
    assert r.returncode == 1, r.stderr
    assert r.stderr.count("\n") == 1 and "Operation not permitted" in r.stderr
    assert r.stderr.startswith(f"nicwatch: error: deploy: {target}: ")
    assert not target.exists()


def test_list_names_every_file() -> None:
    r = subprocess.run([str(TREE_NICWATCH), "deploy", "--list"], capture_output=True,
                       text=True, check=False)
    assert r.returncode == 0
    listed = [line.strip() for line in r.stdout.splitlines() if line.startswith("  ")]
    assert listed == [name for _, name, _ in every_file()]
