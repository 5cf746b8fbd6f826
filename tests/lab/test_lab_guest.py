"""The lab guest itself: it booted the kernel the build resolved, loaded the out-of-tree
netdevsim it built, and its runner got to the end."""

from __future__ import annotations

import build
import qemu


def test_guest_runs_the_kernel_it_was_built_for(lab_guest: build.Guest, guest_facts):
    guest = lab_guest
    assert guest_facts["uname"]["release"] == guest.release
    assert guest.release in guest_facts["proc_version"]
    assert guest.manifest["netdevsim_from"].endswith(guest.version)


def test_runner_finished_and_left_through_isa_debug_exit(lab: qemu.BootResult):
    assert ("error", "runner") not in lab.results, lab.results.get(("error", "runner"))
    assert lab.returncode == 1, f"QEMU exited {lab.returncode} (2 * status + 1 expected, 1)"
    assert any(text.endswith(" runner done") for _, text in lab.events)


def test_netdevsim_is_the_module_built_out_of_tree(guest_facts):
    modules = {line.split()[0]: line for line in guest_facts["modules"]}
    assert "netdevsim" in modules and "(OE)" in modules["netdevsim"]  # out of tree, unsigned
    assert int(guest_facts["tainted"]) & (1 << 12)  # TAINT_OOT_MODULE
