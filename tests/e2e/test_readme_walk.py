"""A stranger's walk through the README (issue #42): read it top to bottom and run every
command its ```sh blocks show, as written, checking each exits as the README says.

How each block is run, chosen on purpose (PLAN below says it per block):

* `scripts/test` is not run: it is this suite (it would run itself). `.ci/run` runs it, and
  this test checks that it does.
* `scripts/run` serves forever, on :10847 of every address. It runs as written, from the
  checkout, but inside a network namespace of the test's own, so the default port cannot
  clash with another daemon on this host; there it sees no interface backed by a device,
  which is what the namespace has. The README's `curl` runs in the same namespace; then the
  daemon is stopped by its PID with SIGTERM, as the README says, and must exit 0 at once.
  `STATE_DIRECTORY` points its state file into the test's directory (as root it would
  otherwise write /var/lib/nicwatch/identity.json on this host). The namespace has no
  network: scripts/run's `pip install -e .` takes setuptools from pip's local sources
  (find-links, cache), as on the machines this suite runs on.
* `. .venv/bin/activate` runs from the checkout; every later block runs in a shell that
  sourced it, as the reader's does, but in the test's directory rather than the checkout,
  so the files they write (expect.toml, first-run/, rules/, dashboards/) land there. They
  read this host's real interfaces.
* Every block runs with /tmp bound to an empty directory of the test's (a mount namespace
  of its own): whatever a command leaves in /tmp is found, and fails the walk.

A block added to the README without a line in PLAN fails the walk, so the walk cannot fall
behind the README.
"""

import os
import re
import shlex
import signal
import subprocess
from pathlib import Path

import pytest

from netns import namespace_with
from paths import REPO
from waiting import wait_until

pytestmark = [pytest.mark.netns, pytest.mark.slow]

README = REPO / "README.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
ACTIVATE = REPO / ".venv" / "bin" / "activate"

# Each block, in README order: how it is run ("skip", "daemon", "in_daemon_ns", "checkout",
# "walk") and the check of its result (in the test below, by this key).
PLAN = {
    "scripts/run": "daemon",
    "scripts/test": "skip",  # the suite itself: run by .ci/run (checked below)
    "curl -s localhost:10847/metrics | grep -E '^(nicwatch_interfaces|nic_link_up)'":
        "in_daemon_ns",
    ". .venv/bin/activate": "checkout",
    "nicwatch show": "walk",
    "printf '[[expect]]\\nall = true\\nmtu = 9000\\n' > expect.toml\n"
    "nicwatch check --config expect.toml": "walk",
    "nicwatch record -o first-run -- sleep 5": "walk",
    "nicwatch diagnose --window 10s": "walk",
    "nicwatch deploy rules --output rules\nnicwatch deploy dashboards --output dashboards":
        "walk",
}


def readme_blocks() -> list[str]:
    text = README.read_text()
    fences = FENCE.findall(text)
    assert all(lang == "sh" for lang, _ in fences), \
        "every README code block is a ```sh block of commands (the walk runs them)"
    indented = [line for line in text.splitlines() if line.startswith("    ")
                and not line.lstrip().startswith(("*", "-"))]
    assert not indented, f"an indented code block the walk does not see: {indented}"
    return [body.strip("\n") for _, body in fences]


# /tmp is bound to an empty directory; the test's own directory (under /tmp) is bound back
# at its path, so every absolute path the commands are given still works.
PRIVATE_TMP = ('cd "$1" && mount --bind "$2" /tmp && mkdir -p "$1" '
               '&& mount --no-canonicalize --bind . "$1" && cd "$3" && shift 3 && exec "$@"')


def in_private_tmp(top: Path, fake_tmp: Path, cwd: Path, argv: list[str]) -> list[str]:
    """``argv`` run in ``cwd``, in a mount namespace of its own where /tmp is ``fake_tmp``
    (``top``, the test's directory, stays where it is)."""
    return ["unshare", "-m", "--propagation", "private", "sh", "-c", PRIVATE_TMP, "sh",
            str(top), str(fake_tmp), str(cwd), *argv]


def left_in_tmp(top: Path, fake_tmp: Path) -> list[str]:
    """What is in the private /tmp but the directories leading to the test's own (made to
    bind it back; empty, as the bind hid them)."""
    parts = top.relative_to("/tmp").parts
    chain = {Path("/tmp", *parts[:i + 1]) for i in range(len(parts))}
    found = {Path("/tmp") / p.relative_to(fake_tmp) for p in fake_tmp.rglob("*")}
    return sorted(str(p) for p in found - chain)


def run(argv: list[str], cwd: Path, env: dict, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_readme_blocks_are_the_planned_walk():
    assert readme_blocks() == list(PLAN), "a README command block changed: update PLAN"
    assert "scripts/test" in (REPO / ".ci" / "run").read_text()
    assert len(README.read_text().split()) <= 1600, "the README is a quick start: ~1,500 words"


def test_the_private_tmp_finds_what_a_command_leaves(tmp_path):
    fake_tmp, work = tmp_path / "tmp", tmp_path / "work"
    fake_tmp.mkdir()
    work.mkdir()
    r = subprocess.run(in_private_tmp(tmp_path, fake_tmp, work,
                                      ["sh", "-c", "touch /tmp/leftover here"]),
                       cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert (work / "here").exists()  # the test's directory is where it was
    assert not Path("/tmp/leftover").exists()
    assert left_in_tmp(tmp_path, fake_tmp) == ["/tmp/leftover"]


def test_strangers_walk(tmp_path):
    assert ACTIVATE.exists(), "scripts/run or scripts/test makes .venv in the checkout"
    blocks = readme_blocks()
    assert blocks == list(PLAN)
    fake_tmp = tmp_path / "tmp"
    work = tmp_path / "walk"
    fake_tmp.mkdir()
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["STATE_DIRECTORY"] = str(tmp_path / "state")
    results: dict[str, subprocess.CompletedProcess] = {}
    with namespace_with("nwreadme", "link set lo up\n") as ns:
        daemon = subprocess.Popen(
            in_private_tmp(tmp_path, fake_tmp, REPO,
                           ["ip", "netns", "exec", ns, "bash", "-c", blocks[0]]),
            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            # scripts/run installs first (pip: seconds), then serves.
            wait_until(lambda: subprocess.run(
                ["ip", "netns", "exec", ns, "curl", "-sf", "localhost:10847/readyz"],
                capture_output=True).returncode == 0, 50, "scripts/run serving", 0.2, daemon)
            # The PID the test holds is the daemon itself: unshare, sh, ip netns exec, bash,
            # scripts/run each exec the next.
            cmdline = Path(f"/proc/{daemon.pid}/cmdline").read_bytes().split(b"\0")
            assert b"serve" in cmdline and any(a.endswith(b"nicwatch") for a in cmdline), cmdline
            for block, how in PLAN.items():
                if how == "in_daemon_ns":
                    results[block] = run(in_private_tmp(tmp_path, fake_tmp, REPO, [
                        "ip", "netns", "exec", ns, "bash", "-c", block]), tmp_path, env)
        finally:
            daemon.send_signal(signal.SIGTERM)
            try:
                _, daemon_err = daemon.communicate(timeout=5)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.communicate()
                raise
    assert daemon.returncode == 0, daemon_err[-2000:]

    activated = f". {shlex.quote(str(ACTIVATE))}\n"
    for block, how in PLAN.items():
        if how == "checkout":
            results[block] = run(in_private_tmp(tmp_path, fake_tmp, REPO, ["bash", "-c", block]),
                                 tmp_path, env)
        elif how == "walk":
            results[block] = run(in_private_tmp(tmp_path, fake_tmp, work,
                                                ["bash", "-c", activated + block]),
                                 tmp_path, env, timeout=90)

    def ok(block: str) -> subprocess.CompletedProcess:
        r = results[block]
        assert r.returncode == 0, (block, r.returncode, r.stderr[-2000:])
        return r

    # What the README says of each.
    curl = ok(blocks[2])
    assert re.search(r"^nicwatch_interfaces 0$", curl.stdout, re.M), curl.stdout
    ok(". .venv/bin/activate")
    show = ok("nicwatch show")
    assert show.stdout.startswith("DEVICE"), show.stdout[:500]

    check = results[blocks[5]]
    assert (work / "expect.toml").exists()
    # exit 0 when everything passes, 1 when something does not: compare with the host's MTUs
    failed = re.findall(r"^FAIL\s+(\S+)\s+mtu\s+9000\s+(\d+)", check.stdout, re.M)
    # (a host with no interface backed by a device has nothing to check: also 1, said so)
    nothing = "nothing checked" in check.stdout + check.stderr
    assert check.returncode == (1 if failed or nothing else 0), (check.returncode, check.stdout,
                                                                  check.stderr)
    for device, actual in failed:
        assert actual != "9000"
        assert (Path("/sys/class/net") / device / "mtu").read_text().strip() == actual

    ok("nicwatch record -o first-run -- sleep 5")
    assert {"before.json", "after.json", "report.txt", "report.json", "report.html"} <= {
        p.name for p in (work / "first-run").iterdir()}

    diagnose = results["nicwatch diagnose --window 10s"]
    verdicts = re.match(r"(\d+) diagnosis signature", diagnose.stdout)
    assert verdicts, (diagnose.returncode, diagnose.stdout, diagnose.stderr)
    holds = int(verdicts.group(1))
    assert diagnose.returncode == (1 if holds else 0), (diagnose.stdout, diagnose.stderr)

    ok(blocks[8])
    assert (work / "rules" / "nicwatch-rules.yml").exists()
    assert {p.name for p in (work / "dashboards").iterdir()} == {"nicwatch-fleet.json",
                                                               "nicwatch-host.json"}
    # The panels and alerts the README names are in what the walk just wrote.
    text = README.read_text()
    section = text.split("## The panels and alerts that matter", 1)[1].split("\n## ", 1)[0]
    titles = set(re.findall(r'"title": "([^"]+)"', "".join(
        p.read_text() for p in (work / "dashboards").iterdir())))
    panels = re.findall(r"^\* \*\*(.+?)\*\*", section, re.M)
    assert len(panels) == 3 and set(panels) <= titles, (panels, sorted(titles))
    rules = (work / "rules" / "nicwatch-rules.yml").read_text()
    alerts = re.findall(r"`(Nic\w+)`", section)
    assert len(alerts) >= 5, alerts
    for alert in alerts:
        assert f"alert: {alert}\n" in rules, alert

    assert not left_in_tmp(tmp_path, fake_tmp), left_in_tmp(tmp_path, fake_tmp)
