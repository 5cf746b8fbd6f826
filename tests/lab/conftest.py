"""The lab: real kernel drivers under QEMU (docs/lab.md). One guest build (cached outside the
repository), one boot for all scenarios; each test_lab_* module asserts one scenario's
evidence. Every test here is marked ``lab`` (deselect with ``-m 'not lab'``); where QEMU or the
packages cannot be had they are skipped with the reason."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import build
import qemu

LAB_STASH = pytest.StashKey[dict[str, object]]()
GUEST_STASH = pytest.StashKey[build.Guest]()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).parent == here and item.module.__name__.startswith("test_lab_"):
            item.add_marker(pytest.mark.lab)
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config) -> qemu.BootResult:
    """The one boot of the lab guest, with every scenario's evidence. With
    NICWATCH_LAB_REPLAY=FILE (saved by `scripts/lab --save FILE`), that boot's evidence
    instead: for writing assertions without booting again; the tests say so in their
    summary line."""
    replay = os.environ.get("NICWATCH_LAB_REPLAY")
    if replay:
        result = qemu.load(Path(replay))
        pytestconfig.stash[LAB_STASH] = {"kernel": f"replayed from {replay}",
                                         "build_seconds": None, "boot_seconds": result.seconds,
                                         "events": result.events, "cached": replay}
        return result
    if shutil.which("qemu-system-x86_64") is None:
        pytest.skip("lab: qemu-system-x86_64 is not installed (scripts/test installs the Debian "
                    "package qemu-system-x86)")
    try:
        guest = build.build()
    except build.LabUnavailable as e:
        pytest.skip(f"lab: {e}")
    wanted = os.environ.get("NICWATCH_LAB_SCENARIOS")
    pytestconfig.stash[GUEST_STASH] = guest
    result = qemu.boot(guest, tmp_path_factory.mktemp("lab"),
                       wanted.split(",") if wanted else None)
    if os.environ.get("NICWATCH_LAB_SAVE"):
        qemu.save(result, Path(os.environ["NICWATCH_LAB_SAVE"]))
    pytestconfig.stash[LAB_STASH] = {
        "kernel": f"{guest.manifest.get('kernel_package')} {guest.version}",
        "build_seconds": guest.manifest.get("seconds"),
        "boot_seconds": round(result.seconds, 1),
        "events": result.events,
        "cached": guest.directory,
    }
    return result


@pytest.fixture(scope="session")
def lab_guest(lab: qemu.BootResult, pytestconfig: pytest.Config) -> build.Guest:
    """The guest the boot ran (its manifest: kernel, packages, build times)."""
    guest = pytestconfig.stash.get(GUEST_STASH, None)
    if guest is None:
        pytest.skip("a replayed boot has no guest")
    return guest


@pytest.fixture(scope="session")
def guest_facts(lab: qemu.BootResult) -> dict[str, object]:
    facts = lab.results.get(("facts", "guest"))
    assert isinstance(facts, dict), "the guest reported no facts:\n" + "\n".join(lab.console[-40:])
    return facts


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int,
                            config: pytest.Config) -> None:
    info = config.stash.get(LAB_STASH, None)
    if info is None:
        return
    terminalreporter.write_sep("-", "nicwatch lab")
    terminalreporter.write_line(f"kernel: {info['kernel']}")
    terminalreporter.write_line(f"guest build (s): {info['build_seconds']} (cached in "
                                f"{info['cached']})")
    terminalreporter.write_line(f"boot with every scenario: {info['boot_seconds']} s")
    for seconds, text in info["events"]:  # type: ignore[attr-defined]
        terminalreporter.write_line(f"  {seconds:7.1f} s  {text}")
