"""`nicwatch deploy` from a real wheel: `pip wheel . --no-deps`, installed into a fresh
virtual environment, prints and writes the repository's deployment files and docs byte for
byte, generates rules from a user's thresholds file with the repository's generator,
carries the LICENSE and project URLs, and refuses bad use with one line and exit status 2."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from nicwatch.cli.deploy import DEPLOY_FILES, GENERATOR, PRIVILEGED, UNIT_COMMAND

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


def expected(kind: str, name: str, nicwatch: Path) -> bytes:
    """A shipped file as deploy gives it: the repository's bytes, the systemd units running
    ``nicwatch`` (the installation that ran deploy) instead of /usr/bin/nicwatch."""
    data = (REPO / DEPLOY_FILES[kind][name]).read_bytes()
    if kind == "systemd":
        data = data.replace(f"ExecStart={UNIT_COMMAND} ".encode(),
                            f"ExecStart={nicwatch} ".encode())
    return data


def hidden_note(installed: Installed) -> str:
    """What deploy says of units that run a nicwatch under /tmp (the test's virtual
    environment), which PrivateTmp=yes hides from the service."""
    return (f"note: the units run {installed.nicwatch}, under /tmp, which nicwatch.service "
            "hides from the service (ProtectHome=yes, PrivateTmp=yes): install nicwatch "
            "elsewhere (a virtual environment in /opt/nicwatch) or see docs/deploy.md\n")


def every_file() -> list[tuple[str, str, str]]:
    return [(kind, name, path) for kind, files in DEPLOY_FILES.items()
            for name, path in files.items()]


def every_doc() -> list[str]:
    """Every page under docs/, subfolders too (the map links into howto/ and reference/)."""
    return sorted(str(p.relative_to(REPO / "docs")) for p in (REPO / "docs").rglob("*.md"))


def test_wheel_carries_every_deploy_file_and_nothing_else(installed: Installed) -> None:
    with zipfile.ZipFile(installed.wheel) as z:
        shipped = {n.removeprefix("nicwatch/share/"): z.read(n) for n in z.namelist()
                   if n.startswith("nicwatch/share/")}
    expected = {path for _, _, path in every_file()} | {GENERATOR}
    expected |= {f"docs/{name}" for name in every_doc()}
    assert shipped == {path: (REPO / path).read_bytes() for path in expected}


def test_shipped_docs_written_out_keep_every_relative_link(installed: Installed,
                                                          tmp_path: Path) -> None:
    """`deploy docs --output DIR` from the wheel writes the map and the pages it links in
    their subfolders, so a page read from the package links to pages that are there."""
    r = installed.run("docs", "--output", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "howto" / "kubernetes.md").is_file()
    assert (tmp_path / "reference" / "flags.md").is_file()
    broken = []
    for page in tmp_path.rglob("*.md"):
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if "://" in target or target.startswith("mailto:"):
                continue
            resolved = (page.parent / target).resolve()
            if resolved.is_relative_to(tmp_path.resolve()) and not resolved.exists():
                broken.append(f"{page.relative_to(tmp_path)} -> {target}")
    assert not broken, broken


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
    shipped = [n for n in DEPLOY_FILES[kind] if (kind, n) not in PRIVILEGED]
    written = {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert written == {name: expected(kind, name, installed.nicwatch) for name in shipped}
    assert r.stdout.decode().splitlines() == [f"wrote {out / n}" for n in shipped]
    assert all((out / n).stat().st_mode & 0o777 == 0o644 for n in shipped)


def test_the_privilege_raising_drop_in_only_when_named(installed: Installed,
                                                       tmp_path: Path) -> None:
    """The documented socket-activation recipe (`deploy systemd --output DIR`) wrote the
    drop-in granting CAP_NET_ADMIN and PrivateUsers=no beside it without a word; now it
    is left out and said so, and written when named."""
    drop_in = "nicwatch.service.d/module-collector.conf"
    assert ("systemd", drop_in) in PRIVILEGED
    r = installed.run("systemd", "--output", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / drop_in).exists()
    assert (tmp_path / "nicwatch.service.d/socket-activation.conf").is_file()
    assert r.stderr.decode() == (f"not written: {drop_in} grants CAP_NET_ADMIN and "
                                 "PrivateUsers=no for --collector.module (systemd-analyze "
                                 "security: 1.3 -> 1.7); name it to write it\n"
                                 + hidden_note(installed))
    r = installed.run("systemd", drop_in, "--output", str(tmp_path))
    assert (r.returncode, r.stderr.decode()) == (0, hidden_note(installed))
    assert (tmp_path / drop_in).read_bytes() == (REPO / "systemd" / drop_in).read_bytes()
    listed = installed.run("--list").stdout.decode()
    assert f"  {drop_in}  (only when named: grants CAP_NET_ADMIN" in listed


def test_output_never_replaces_an_edited_file_without_force(installed: Installed,
                                                            tmp_path: Path) -> None:
    """Running the recipe twice replaced an edited nicwatch.toml silently. Now a file that
    differs stops the whole write (nothing written, exit 1, one line), a file that holds
    the shipped bytes is left as it is, and --force replaces."""
    edited = b"interval = \"1s\"  # this host's own\n"
    (tmp_path / "nicwatch.toml").write_bytes(edited)
    r = installed.run("config", "--output", str(tmp_path))
    assert r.returncode == 1 and r.stdout == b""
    assert r.stderr.decode() == (f"nicwatch: error: deploy: {tmp_path / 'nicwatch.toml'} "
                                 "differs from the file nicwatch ships; nothing written "
                                 "(--force replaces it)\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nicwatch.toml"]  # none of the rest
    assert (tmp_path / "nicwatch.toml").read_bytes() == edited
    (tmp_path / "nicwatch.toml").unlink()
    assert installed.run("config", "--output", str(tmp_path)).returncode == 0
    before = {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()}
    again = installed.run("config", "--output", str(tmp_path))
    assert again.returncode == 0, again.stderr
    assert again.stdout.decode().splitlines() == [f"unchanged {tmp_path / n}"
                                                  for n in DEPLOY_FILES["config"]]
    assert {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()} == before
    (tmp_path / "roce-fabric.toml").write_bytes(edited)
    forced = installed.run("config", "--output", str(tmp_path), "--force")
    assert forced.returncode == 0, forced.stderr
    assert (tmp_path / "roce-fabric.toml").read_bytes() == (
        REPO / "deploy/roce-fabric.toml").read_bytes()
    assert f"wrote {tmp_path / 'roce-fabric.toml'}" in forced.stdout.decode().splitlines()


def test_a_symlink_in_the_way_counts_as_different(installed: Installed, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.toml"
    target.write_bytes((REPO / "deploy/nicwatch.toml").read_bytes())
    out = tmp_path / "out"
    out.mkdir()
    (out / "nicwatch.toml").symlink_to(target)
    r = installed.run("config", "nicwatch.toml", "--output", str(out))
    assert r.returncode == 1 and b"differs from the file nicwatch ships" in r.stderr
    assert (out / "nicwatch.toml").is_symlink()


@pytest.mark.parametrize(("kind", "name", "path"), every_file())
def test_one_file_to_stdout(installed: Installed, kind: str, name: str, path: str) -> None:
    r = installed.run(kind, name)
    assert r.returncode == 0
    assert r.stderr.decode() == (hidden_note(installed) if kind == "systemd" else "")
    assert r.stdout == expected(kind, name, installed.nicwatch)


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
    r = installed.run("config", "nicwatch.toml", "--output", str(tmp_path), "--force")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "nicwatch.toml").read_bytes() == (REPO / "deploy/nicwatch.toml").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nicwatch.toml"]  # no temp files


def test_every_deployment_file_in_the_tree_is_shipped() -> None:
    tree = {str(p.relative_to(REPO)) for pattern in (
        "systemd/**/*", "grafana/*.json", "deploy/kubernetes/*.yaml", "deploy/*.toml",
        "deploy/prometheus/*.yml", "deploy/prometheus/*.toml", "deploy/alertmanager/*")
        for p in REPO.glob(pattern) if p.is_file()}
    assert tree == {path for _, _, path in every_file()}


@pytest.mark.parametrize(("args", "message"), [
    (("bogus",), "argument KIND: invalid choice: 'bogus' (choose from 'systemd', 'rules', "
                 "'dashboards', 'kubernetes', 'config', 'docs')"),
    (("dashboards", "nicwatch.json"), "deploy dashboards: no file 'nicwatch.json' (files: "
                                      "nicwatch-fleet.json, nicwatch-host.json)"),
    ((), "deploy: name a kind (systemd, rules, dashboards, kubernetes, config, docs); --list "
         "shows the files"),
    (("rules", "--output", "/etc/hostname"), "deploy: --output /etc/hostname: not a directory"),
    (("--list", "rules"), "deploy: --list takes no kind, file, --output, --force or "
                          "--thresholds"),
    (("systemd", "--thresholds", "thresholds.toml"),
     "deploy: --thresholds only goes with rules, not systemd"),
    (("rules", "--force"), "deploy: --force only goes with --output DIR"),
])
def test_bad_use_is_one_line_and_exit_2(args: tuple[str, ...], message: str) -> None:
    r = subprocess.run([str(TREE_NICWATCH), "deploy", *args], capture_output=True, text=True,
                       check=False)
    assert (r.returncode, r.stdout, r.stderr) == (2, "", f"nicwatch: error: {message}\n")


def test_a_kind_of_several_files_prints_each_under_a_header(installed: Installed) -> None:
    """Issue #42 item 4: `nicwatch deploy systemd`, the README's form, exited 2 ("3 files
    ... name one"). Now it prints each file under a head(1)-style header and says on stderr
    how to write them; the privilege-raising drop-in stays out, and said so."""
    for kind in ("systemd", "config", "dashboards"):
        r = installed.run(kind)
        assert r.returncode == 0, r.stderr
        names = [n for n in DEPLOY_FILES[kind] if (kind, n) not in PRIVILEGED]
        printed = re.split(rb"^==> (\S+) <==\n", r.stdout, flags=re.M)
        assert printed[0] == b""
        got = dict(zip((n.decode() for n in printed[1::2]), printed[2::2], strict=True))
        assert list(got) == names
        for name, body in got.items():  # one blank line between files
            want = expected(kind, name, installed.nicwatch)
            assert body == (want if name == names[-1] else want + b"\n"), name
        lines = r.stderr.decode().splitlines()
        assert lines[0] == (f"nicwatch: {len(names)} files printed, each under a ==> NAME <== "
                            f"header; `nicwatch deploy {kind} --output DIR` writes them, "
                            f"`nicwatch deploy {kind} {names[0]}` prints one alone")


def test_the_units_run_the_nicwatch_that_wrote_them(installed: Installed,
                                                    tmp_path: Path) -> None:
    """Issue #42 item 10: the units ran /usr/bin/nicwatch, which pip never installs (not
    on this machine either). What `deploy systemd --output DIR` writes runs the installed
    console script; systemd-analyze verify accepts the units (it checks that the command
    exists and is executable), and the command runs."""
    assert not Path(UNIT_COMMAND).exists()  # else the test could not tell them apart
    r = installed.run("systemd", "--output", str(tmp_path))
    assert r.returncode == 0, r.stderr
    starts = [line.split("=", 1)[1] for unit in ("nicwatch.service",
                                                 "nicwatch.service.d/socket-activation.conf")
              for line in (tmp_path / unit).read_text().splitlines()
              if line.startswith("ExecStart=") and line != "ExecStart="]
    assert len(starts) == 2 and all(s.split()[0] == str(installed.nicwatch) for s in starts)
    verify = subprocess.run(["systemd-analyze", "verify", str(tmp_path / "nicwatch.socket"),
                             str(tmp_path / "nicwatch.service")],
                            capture_output=True, text=True, check=False)
    assert verify.returncode == 0 and verify.stderr == "", verify.stdout + verify.stderr
    version = subprocess.run([starts[0].split()[0], "--version"], capture_output=True,
                             text=True, check=False)
    assert version.returncode == 0 and version.stdout.startswith("nicwatch "), version.stderr
    assert hidden_note(installed) in r.stderr.decode()


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
    listed = [line.split()[0] for line in r.stdout.splitlines() if line.startswith("  ")]
    assert listed == [name for _, name, _ in every_file()] + every_doc()


# --- pip users: the thresholds, the generator and the docs the messages name -------------


def test_rules_from_a_users_thresholds_file(installed: Installed, tmp_path: Path) -> None:
    """The shipped thresholds.toml, edited, gives rules with the new threshold; unedited,
    the same groups as the committed rules (one generator for both)."""
    r = installed.run("config", "thresholds.toml")
    shipped = (REPO / "deploy/prometheus/thresholds.toml").read_bytes()
    assert r.returncode == 0 and r.stdout == shipped
    mine = tmp_path / "thresholds.toml"
    mine.write_bytes(r.stdout)
    same = installed.run("rules", "--thresholds", str(mine))
    assert same.returncode == 0, same.stderr
    committed = yaml.safe_load((REPO / "deploy/prometheus/nicwatch-rules.yml").read_text())
    assert yaml.safe_load(same.stdout) == committed
    assert same.stdout.decode().startswith(
        f"# Generated by nicwatch deploy rules --thresholds {mine}.\n")
    mine.write_text(mine.read_text().replace("threshold = 0.10  # fraction of time the peer",
                                             "threshold = 0.25  # fraction of time the peer"))
    out = tmp_path / "rules"
    r = installed.run("rules", "--thresholds", str(mine), "--output", str(out))
    assert r.returncode == 0 and r.stdout.decode() == f"wrote {out / 'nicwatch-rules.yml'}\n"
    groups = yaml.safe_load((out / "nicwatch-rules.yml").read_text())["groups"]
    rule = next(r for g in groups for r in g["rules"] if r.get("alert") == "NicRxPauseTimeHigh")
    assert rule["expr"].endswith("> 0.25") and "(threshold 25%)" in rule["annotations"][
        "description"]
    check = subprocess.run(["promtool", "check", "rules", str(out / "nicwatch-rules.yml")],
                           capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.parametrize(("old", "new", "message"), [
    ("[labels]", "intervall = 5\n[labels]", "intervall: unknown section"),
    ('for = "10m"', 'for = "soon"', "alerts.NicRxPauseTimeHigh.for: expected a duration"),
    ("[labels]", "[[[", "not valid TOML"),
])
def test_a_bad_thresholds_file_is_one_line_exit_2(installed: Installed, tmp_path: Path,
                                                  old: str, new: str, message: str) -> None:
    path = tmp_path / "thresholds.toml"
    path.write_text((REPO / "deploy/prometheus/thresholds.toml").read_text().replace(old, new, 1))
    r = installed.run("rules", "--thresholds", str(path))
    assert (r.returncode, r.stdout) == (2, b"")
    err = r.stderr.decode()
    assert err.count("\n") == 1 and message in err and str(path) in err, err
    assert err.startswith("nicwatch: error: deploy rules --thresholds: ")


def test_every_doc_a_message_names_is_installed(installed: Installed) -> None:
    """Every docs/NAME.md named in the package's text (help, messages, HELP strings) prints
    from the wheel, and `pip show -v` gives the project's home and documentation URLs."""
    named = {m for path in (REPO / "src/nicwatch").rglob("*.py")
             for m in re.findall(r"docs/([a-z-]+\.md)", path.read_text())}
    assert {"optics.md", "sriov.md", "rdma.md", "expectations.md"} <= named
    for name in sorted(named):
        r = installed.run("docs", name)
        assert r.returncode == 0 and r.stdout == (REPO / "docs" / name).read_bytes(), name
    show = subprocess.run([str(installed.venv / "bin" / "python"), "-m", "pip",
                           "--disable-pip-version-check", "show", "-v", "nicwatch"],
                          capture_output=True, text=True, check=True)
    urls = dict(re.findall(r"^\s+(\w+), (https://\S+)$", show.stdout, re.MULTILINE))
    assert urls.get("Homepage") == "https://github.com/nicwatch/nicwatch", show.stdout
    assert urls.get("Documentation") == "https://github.com/nicwatch/nicwatch/tree/main/docs"
    help_text = subprocess.run([str(installed.nicwatch), "--help"], capture_output=True,
                               text=True, check=True).stdout
    assert "nicwatch deploy docs NAME.md" in " ".join(help_text.split())
