"""nicwatch.sources.ethtool_module: the real kernel path on veth pairs (no module: EOPNOTSUPP)
and as the unprivileged user (EPERM); real modules' EEPROMs through a double of the kernel's
MODULE_EEPROM_GET replies and of the legacy ioctls (tests/helpers/fixture_module.py); the
worker thread's cadence and stop; the poll never waiting for it."""

from __future__ import annotations

import errno
import json
import subprocess
import textwrap
import threading
import time

import pytest

from nicwatch.model import ModuleEeprom, NetClass
from nicwatch.normalize.module import decode, pages_to_read
from nicwatch.sources import Poll, SourceOptions
from nicwatch.sources.ethtool_module import (
    ETH_MODULE_SFF_8472,
    ETH_MODULE_SFF_8636,
    EthtoolModuleSource,
    KernelModuleReader,
    ModuleReadError,
)

from fixture_module import (
    MODULE,
    KernelModuleEeprom,
    LegacyModuleIoctl,
    fixture_eeprom,
    flat_bytes,
)
from fixture_vdm import vdm_eeprom
from hostd import AS_NOBODY
from netns import PYTHON, ns_python
from waiting import wait_until

SFP = "sfp-oem-10g-lr-go-ethtool.txt"
QSFP28 = "qsfp28-fs-ir4-go-ethtool.txt"
OSFP = "osfp-800g-dr8-juniper.txt"


def netclass(name: str, ifindex: int) -> NetClass:
    return NetClass(name, ifindex, *[None] * 12)


def poll_of(*ifaces: tuple[str, int]) -> Poll:
    return Poll([netclass(n, i) for n, i in ifaces])


# --- the reader against the kernel double ---------------------------------------------------


@pytest.mark.parametrize("name", [SFP, QSFP28, OSFP, "sfp-flexoptix-10g-go-ethtool.txt",
                                  "qsfp-fs-dac-go-ethtool.txt", "osfp-800g-aec-credo.txt"])
def test_reader_reads_the_pages_the_decoder_names_and_decodes_like_the_dump(name):
    real = fixture_eeprom(name)
    kernel = KernelModuleEeprom({7: ("eth7", real)})
    read = KernelModuleReader(kernel, None, pages_to_read, clock=lambda: 1234.5).read_module(
        7, "eth7")
    assert read.read_at == 1234.5
    assert read.lower[0x50] == real.lower[0x50]
    plan = pages_to_read(real.lower[0x50], real.upper.get((0x50, 0, 1)))
    assert plan, "the decoder names pages for this module"
    # Exactly the halves the plan names (of those the module has), byte for byte.
    assert set(read.upper) == {p for p in plan if p in real.upper}
    for key, half in read.upper.items():
        assert half == real.upper[key]
    assert decode(read) == decode(ModuleEeprom(real.lower, {k: real.upper[k] for k in read.upper},
                                               0.0))
    assert decode(read), "values came out"
    # Every request a valid one (the double refuses what eeprom.c refuses) of one half.
    assert all(length == 128 and offset in (0, 128) for *_, offset, length in kernel.requests)
    assert kernel.requests[0] == (7, 0x50, 0, 0, 0, 128)  # lower A0h first


def test_sff8472_with_diagnostics_reads_both_halves_of_a2h():
    kernel = KernelModuleEeprom({3: ("eth3", fixture_eeprom(SFP))})
    read = KernelModuleReader(kernel, None, pages_to_read).read_module(3, "eth3")
    assert [r[1:5] for r in kernel.requests] == [(0x50, 0, 0, 0), (0x50, 0, 0, 128),
                                                 (0x51, 0, 0, 0), (0x51, 0, 0, 128)]
    values = {(v.metric, tuple(v.labels.items())): v.value for v in decode(read)}
    assert values[("nic_module_temperature_celsius", ())] == pytest.approx(34.54, abs=0.01)


def test_a_page_the_module_lacks_is_left_out_and_the_rest_read():
    real = fixture_eeprom(QSFP28)
    upper = {k: v for k, v in real.upper.items() if k != (0x50, 0, 3)}  # no thresholds page
    kernel = KernelModuleEeprom({2: ("eth2", ModuleEeprom(real.lower, upper, 0.0))})
    read = KernelModuleReader(kernel, None, pages_to_read).read_module(2, "eth2")
    assert (0x50, 0, 3) not in read.upper and (0x50, 0, 0) in read.upper
    metrics = {v.metric for v in decode(read)}
    assert "nic_module_temperature_celsius" in metrics
    assert "nic_module_rx_power_threshold_watts" not in metrics


def test_kernel_errors_become_states():
    cases = {errno.EOPNOTSUPP: "unsupported", errno.ENODEV: "absent", errno.EIO: "absent",
             errno.EPERM: "not_permitted", errno.ETIMEDOUT: "failed", errno.EBUSY: "busy"}
    for number, state in cases.items():
        kernel = KernelModuleEeprom({}, errors={1: number})
        with pytest.raises(ModuleReadError) as caught:
            KernelModuleReader(kernel, None, pages_to_read).read_module(1, "eth1")
        assert caught.value.errno == number and caught.value.state == state


def test_legacy_ioctl_when_netlink_says_eopnotsupp():
    flat = flat_bytes(MODULE / QSFP28)
    assert len(flat) == 640  # lower + pages 00h-03h, as the ioctl returned it
    kernel = KernelModuleEeprom({}, errors={5: errno.EOPNOTSUPP})
    read = KernelModuleReader(kernel, LegacyModuleIoctl(ETH_MODULE_SFF_8636, flat),
                              pages_to_read).read_module(5, "eth5")
    real = fixture_eeprom(QSFP28)
    assert read.lower == {0x50: real.lower[0x50]}
    assert read.upper == real.upper
    assert decode(read) == decode(real)


def test_legacy_sff8472_layout_puts_a2h_at_256():
    flat = flat_bytes(MODULE / SFP)
    read = KernelModuleReader(None, LegacyModuleIoctl(ETH_MODULE_SFF_8472, flat),
                              pages_to_read).read_module(1, "eth1")
    real = fixture_eeprom(SFP)
    assert read.lower[0x51] == real.lower[0x51] and read.upper[(0x51, 0, 0)] == flat[384:512]
    assert decode(read) == decode(real)


def test_other_netlink_errors_do_not_fall_back_to_the_ioctl():
    kernel = KernelModuleEeprom({}, errors={5: errno.EPERM})
    ioctl = LegacyModuleIoctl(ETH_MODULE_SFF_8636, flat_bytes(MODULE / QSFP28))
    with pytest.raises(ModuleReadError) as caught:
        KernelModuleReader(kernel, ioctl, pages_to_read).read_module(5, "eth5")
    assert caught.value.state == "not_permitted"


# --- the source: thread, cadence, poll ------------------------------------------------------


def test_poll_copies_the_latest_read_and_status():
    kernel = KernelModuleEeprom({2: ("eth2", fixture_eeprom(QSFP28))}, errors={3: errno.EOPNOTSUPP})
    source = EthtoolModuleSource(KernelModuleReader(kernel, None, pages_to_read), interval=3600)
    try:
        first = poll_of(("eth2", 2), ("eth3", 3))
        source.read(first)  # starts the worker; nothing read yet
        assert "module" not in first.parts["eth2"] and not first.errors
        wait_until(lambda: source.cycles >= 1)
        second = poll_of(("eth2", 2), ("eth3", 3))
        source.read(second)
        eeprom = second.parts["eth2"]["module"]
        assert eeprom.lower[0x50][0] == 0x11
        assert second.parts["eth2"]["module_read"].state == "ok"
        assert "module" not in second.parts["eth3"]
        assert second.parts["eth3"]["module_read"].state == "unsupported"
        assert second.parts["eth3"]["module_read"].errors == {}
        assert not second.errors  # absent, not an error line every poll
        # The same object poll after poll until the next read: decoded once per read.
        third = poll_of(("eth2", 2), ("eth3", 3))
        source.read(third)
        assert third.parts["eth2"]["module"] is eeprom
    finally:
        source.close()
    assert kernel.closed


def test_the_poll_never_waits_for_a_module_read():
    started, release = threading.Event(), threading.Event()

    class Stuck:
        def read_module(self, ifindex, ifname, should_stop=lambda: False):
            started.set()
            release.wait(10)
            return None

        def close(self):
            pass

    source = EthtoolModuleSource(Stuck(), interval=3600)
    try:
        source.read(poll_of(("eth0", 1)))
        assert started.wait(5)
        t0 = time.perf_counter()
        for _ in range(20):
            source.read(poll_of(("eth0", 1)))
        assert time.perf_counter() - t0 < 0.5  # 20 polls while the read is stuck
    finally:
        release.set()
        source.close()


def test_cadence_is_the_interval_not_the_poll():
    kernel = KernelModuleEeprom({2: ("eth2", fixture_eeprom(SFP))})
    source = EthtoolModuleSource(KernelModuleReader(kernel, None, pages_to_read), interval=0.3)
    try:
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:  # polls every 10 ms: 100 polls
            source.read(poll_of(("eth2", 2)))
            time.sleep(0.01)
        cycles = source.cycles
    finally:
        source.close()
    # One read at start, then one per 0.3 s: 4 in 1 s (3 on a slow machine), never per poll.
    assert 2 <= cycles <= 5, cycles
    assert len(kernel.requests) == cycles * 4  # lower + upper of A0h and A2h each time


def test_close_stops_a_waiting_worker_promptly():
    kernel = KernelModuleEeprom({2: ("eth2", fixture_eeprom(SFP))})
    source = EthtoolModuleSource(KernelModuleReader(kernel, None, pages_to_read), interval=3600)
    source.read(poll_of(("eth2", 2)))
    wait_until(lambda: source.cycles >= 1)
    t0 = time.perf_counter()
    source.close()
    assert time.perf_counter() - t0 < 0.5
    assert not source._thread.is_alive() and kernel.closed


def test_close_stops_a_worker_mid_read_between_halves():
    # 100 modules of 5 halves at 20 ms a half: 10 s to read them all.
    real = fixture_eeprom(OSFP)
    kernel = KernelModuleEeprom({i: (f"eth{i}", real) for i in range(1, 101)}, delay=0.02)
    source = EthtoolModuleSource(KernelModuleReader(kernel, None, pages_to_read), interval=3600)
    source.read(poll_of(*((f"eth{i}", i) for i in range(1, 101))))
    wait_until(lambda: len(kernel.requests) >= 3)
    t0 = time.perf_counter()
    source.close()
    assert time.perf_counter() - t0 < 0.5
    assert len(kernel.requests) < 20 and source.cycles == 0


def test_a_new_interface_is_read_at_once_not_an_interval_later():
    kernel = KernelModuleEeprom({2: ("eth2", fixture_eeprom(SFP)),
                                 4: ("eth4", fixture_eeprom(QSFP28))})
    source = EthtoolModuleSource(KernelModuleReader(kernel, None, pages_to_read), interval=3600)
    try:
        source.read(poll_of(("eth2", 2)))
        wait_until(lambda: source.cycles >= 1)
        source.read(poll_of(("eth2", 2), ("eth4", 4)))
        wait_until(lambda: source.cycles >= 2)
        after = poll_of(("eth2", 2), ("eth4", 4))
        source.read(after)
        assert after.parts["eth4"]["module"].lower[0x50][0] == 0x11
        # An interface that goes away takes its state with it.
        source.read(poll_of(("eth4", 4)))
        wait_until(lambda: source.cycles >= 3)
        assert "eth2" not in source._states
    finally:
        source.close()


def test_last_good_read_stays_with_its_age_through_failures_and_errors_are_counted():
    clock = [1000.0]
    kernel = KernelModuleEeprom({2: ("eth2", fixture_eeprom(SFP))})
    reader = KernelModuleReader(kernel, None, pages_to_read, clock=lambda: clock[0])
    source = EthtoolModuleSource(reader, interval=3600, clock=lambda: clock[0])
    try:
        source.read(poll_of(("eth2", 2)))
        wait_until(lambda: source.cycles >= 1)
        clock[0] = 1060.0
        kernel.errors[2] = errno.ETIMEDOUT
        source._wake.set()
        wait_until(lambda: source.cycles >= 2)
        poll = poll_of(("eth2", 2))
        source.read(poll)
        assert poll.parts["eth2"]["module"].read_at == 1000.0  # the old read, 60 s old
        status = poll.parts["eth2"]["module_read"]
        assert (status.state, status.attempted_at, dict(status.errors)) == (
            "failed", 1060.0, {"ETIMEDOUT": 1})
        kernel.errors[2] = errno.EIO  # the module was pulled: its values go
        source._wake.set()
        wait_until(lambda: source.cycles >= 3)
        poll = poll_of(("eth2", 2))
        source.read(poll)
        assert "module" not in poll.parts["eth2"]
        assert poll.parts["eth2"]["module_read"].state == "absent"
        assert dict(poll.parts["eth2"]["module_read"].errors) == {"ETIMEDOUT": 1}
    finally:
        source.close()


def test_open_is_opt_in():
    assert EthtoolModuleSource.open(SourceOptions()) is None
    source = EthtoolModuleSource.open(SourceOptions(module=True, module_interval=42.0))
    try:
        assert source is not None and source.interval == 42.0
    finally:
        source.close()


# --- the real kernel ------------------------------------------------------------------------

# Runs the source over several cycles inside a namespace (or as another user) and prints what
# the polls saw and what was logged.
RUN_SOURCE = textwrap.dedent("""
    import json, logging, socket, sys, time
    import structlog
    lines = []
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
                        processors=[lambda _, method, event: lines.append([method, event["event"]])
                                    or event, structlog.processors.JSONRenderer()])
    from nicwatch.model import NetClass
    from nicwatch.normalize.module import pages_to_read
    from nicwatch.sources import Poll
    from nicwatch.sources.ethtool_ioctl import EthtoolIoctl
    from nicwatch.sources.ethtool_module import (EthtoolModuleSource, KernelModuleReader,
                                                 ModuleNetlink)
    ifaces = [(name, socket.if_nametoindex(name)) for name in NAMES]
    source = EthtoolModuleSource(KernelModuleReader(ModuleNetlink(), EthtoolIoctl(),
                                                    pages_to_read), interval=0.05)
    polls = []
    for _ in range(8):
        poll = Poll([NetClass(n, i, *[None] * 12) for n, i in ifaces])
        source.read(poll)
        polls.append({n: {"module": "module" in p,
                          "state": p["module_read"].state if "module_read" in p else None,
                          "errors": dict(p["module_read"].errors) if "module_read" in p else None}
                      for n, p in poll.parts.items()} | {"errors": len(poll.errors)})
        time.sleep(0.06)
    source.close()
    print(json.dumps({"polls": polls, "cycles": source.cycles, "log": lines}))
""")


def test_veth_has_no_module_absent_and_quiet_over_several_polls(veth_pair):
    out = ns_python(veth_pair.ns_a, RUN_SOURCE.replace("NAMES", repr([veth_pair.a, "lo"])))
    assert out["cycles"] >= 3
    settled = out["polls"][-1]
    for name in (veth_pair.a, "lo"):
        # veth and lo have no module ops: the kernel's MODULE_EEPROM_GET (and its own
        # fallback) and the legacy ioctl all say EOPNOTSUPP.
        assert settled[name] == {"module": False, "state": "unsupported", "errors": {}}
    assert all(p["errors"] == 0 for p in out["polls"])
    assert not any(p[veth_pair.a]["module"] for p in out["polls"])
    # One line per interface when its state first became known, none per poll or cycle.
    module_lines = [e for e in out["log"] if e[1].startswith("module")]
    assert len(module_lines) == 2, module_lines
    assert all(level == "info" for level, _ in module_lines)


def test_kernel_answers_module_eeprom_get_with_eopnotsupp_on_veth(veth_pair):
    code = textwrap.dedent(f"""
        import json, socket
        from nicwatch.sources.ethtool_module import ModuleNetlink
        from nicwatch.sources.netlink import KernelError
        sock = ModuleNetlink()
        try:
            sock.half(socket.if_nametoindex({veth_pair.a!r}), 0x50, 0, 0, False)
            print(json.dumps("read"))
        except KernelError as e:
            print(json.dumps(e.errno))
    """)
    assert ns_python(veth_pair.ns_a, code) == errno.EOPNOTSUPP


def test_without_cap_net_admin_the_state_is_not_permitted_logged_once():
    r = subprocess.run([*AS_NOBODY, PYTHON, "-c", RUN_SOURCE.replace("NAMES", "['lo']")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["polls"][-1]["lo"] == {"module": False, "state": "not_permitted", "errors": {}}
    assert out["cycles"] >= 3
    warnings = [e for e in out["log"] if e[0] == "warning"]
    assert warnings == [["warning", "module_read_not_permitted"]]
    assert len([e for e in out["log"] if e[1].startswith("module")]) == 1


# --- MODULE_GET: the module power mode ------------------------------------------------------


def test_kernel_module_get_on_veth_answers_without_a_power_mode_unprivileged(veth_pair):
    """net/ethtool/module.c: MODULE_GET needs no capability, and for a driver without
    get_module_power_mode (veth) the reply holds the header only: no power mode, not an error."""
    code = textwrap.dedent(f"""
        import json, socket
        from nicwatch.sources.ethtool_module import ModuleNetlink
        print(json.dumps(repr(ModuleNetlink().power_mode(socket.if_nametoindex({veth_pair.a!r})))))
    """)
    assert ns_python(veth_pair.ns_a, code) == "None"
    r = subprocess.run([*AS_NOBODY, PYTHON, "-c", "from nicwatch.sources.ethtool_module import "
                        "ModuleNetlink; print(ModuleNetlink().power_mode(1))"],
                       capture_output=True, text=True, timeout=60)
    assert (r.returncode, r.stdout.strip()) == (0, "None"), r.stderr


def test_power_mode_is_read_with_the_module_and_kept_on_its_eeprom():
    from nicwatch.model import ModulePowerMode
    real = fixture_eeprom(OSFP)
    reported = ModuleEeprom(real.lower, real.upper, 0.0, ModulePowerMode("auto", "low"))
    kernel = KernelModuleEeprom({4: ("eth4", reported), 5: ("eth5", real)})
    reader = KernelModuleReader(kernel, None, pages_to_read)
    assert reader.read_module(4, "eth4").power == ModulePowerMode("auto", "low")
    assert reader.read_module(5, "eth5").power is None  # the driver reports none
    assert kernel.power_requests == 2


def test_a_kernel_without_module_get_is_asked_once():
    """Before 5.16 generic netlink answers the unknown command with EOPNOTSUPP: the EEPROM is
    still read and decoded, and MODULE_GET is not sent again."""
    kernel = KernelModuleEeprom({4: ("eth4", fixture_eeprom(OSFP))}, module_get=errno.EOPNOTSUPP)
    reader = KernelModuleReader(kernel, None, pages_to_read)
    first, second = reader.read_module(4, "eth4"), reader.read_module(4, "eth4")
    assert first.power is None and second.power is None and decode(second)
    assert kernel.power_requests == 1


def test_sff8079_module_a2h_is_not_read():
    """Byte 94 = 0: the kernel's fallback would answer an i2c 0x51 read with A0h bytes; the
    reader does not ask for A2h at all."""
    real = fixture_eeprom(SFP)
    a0 = bytearray(real.lower[0x50])
    a0[94] = 0
    a0[95] = sum(a0[64:95]) & 0xFF  # CC_EXT, as a module with that byte holds it
    kernel = KernelModuleEeprom({3: ("eth3", ModuleEeprom({0x50: bytes(a0), 0x51: real.lower[0x51]},
                                                          real.upper, 0.0))})
    read = KernelModuleReader(kernel, None, pages_to_read).read_module(3, "eth3")
    assert {r[1] for r in kernel.requests} == {0x50} and 0x51 not in read.lower


def test_reader_reads_vdm_pages_in_three_steps_where_the_module_advertises_them():
    # The real DR8 advertises VDM (page 01h byte 142 bit 6); its VDM pages are spec-built
    # (tests/helpers/fixture_vdm.py). The reader learns page 2Fh from page 01h, then the
    # group's descriptor, sample and threshold pages and the flag page from page 2Fh.
    module = vdm_eeprom()
    kernel = KernelModuleEeprom({4: ("eth4", module)})
    read = KernelModuleReader(kernel, None, pages_to_read).read_module(4, "eth4")
    pages = [page for _, i2c, bank, page, offset, _ in kernel.requests if offset == 128]
    assert pages[:4] == [0x00, 0x01, 0x02, 0x11]
    assert pages[4:] == [0x2F, 0x20, 0x24, 0x28, 0x2C]
    lane5 = [v for v in decode(read) if v.metric == "nic_module_vdm_pre_fec_ber"
             and v.labels == {"lane": "5", "side": "media", "stat": "current"}]
    assert [round(v.value, 10) for v in lane5] == [3.2e-4]
    # The same module without VDM pages (the published dump): page 2Fh is asked for, the
    # module lacks it, and nothing else is read.
    kernel = KernelModuleEeprom({4: ("eth4", fixture_eeprom(OSFP))})
    KernelModuleReader(kernel, None, pages_to_read).read_module(4, "eth4")
    pages = [page for _, i2c, bank, page, offset, _ in kernel.requests if offset == 128]
    assert pages == [0x00, 0x01, 0x02, 0x11, 0x2F]


def test_module_flash_in_progress_reads_busy_keeps_the_last_reading_and_counts_nothing():
    # While the kernel flashes a module's firmware it answers MODULE_EEPROM_GET with EBUSY
    # (net/ethtool/eeprom.c, module_fw_flash_in_progress); the flash itself reports only to
    # the socket that started it (net/ethtool/module.c, genlmsg_unicast).
    clock = [1000.0]
    kernel = KernelModuleEeprom({2: ("eth2", fixture_eeprom(OSFP))})
    reader = KernelModuleReader(kernel, None, pages_to_read, clock=lambda: clock[0])
    source = EthtoolModuleSource(reader, interval=3600, clock=lambda: clock[0])
    try:
        source.read(poll_of(("eth2", 2)))
        wait_until(lambda: source.cycles >= 1)
        clock[0] = 1060.0
        kernel.errors[2] = errno.EBUSY
        source._wake.set()
        wait_until(lambda: source.cycles >= 2)
        poll = poll_of(("eth2", 2))
        source.read(poll)
        assert poll.parts["eth2"]["module"].read_at == 1000.0
        status = poll.parts["eth2"]["module_read"]
        assert (status.state, status.attempted_at, dict(status.errors)) == ("busy", 1060.0, {})
        del kernel.errors[2]  # the flash is over: read again
        clock[0] = 1120.0
        source._wake.set()
        wait_until(lambda: source.cycles >= 3)
        poll = poll_of(("eth2", 2))
        source.read(poll)
        assert poll.parts["eth2"]["module_read"].state == "ok"
        assert poll.parts["eth2"]["module"].read_at == 1120.0
    finally:
        source.close()
