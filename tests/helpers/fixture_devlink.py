"""devlink dump replies built to the kernel's layout, from `devlink health` and `devlink dev
info` text fixtures:
no devlink family on the test machine (and no netdevsim), so the kernel side is a double;
the lab (tests/lab, docs/lab.md) runs the real devlink core with netdevsim under QEMU.

Layout (include/uapi/linux/devlink.h; net/devlink/health.c devlink_nl_health_reporter_fill,
net/devlink/port.c devlink_nl_port_fill): genlmsghdr, BUS_NAME and DEV_NAME strings,
PORT_INDEX u32 for a port reporter, then the HEALTH_REPORTER nest opened with
nla_nest_start_noflag (no NLA_F_NESTED): NAME, STATE u8, ERR_COUNT and RECOVER_COUNT u64,
GRACEFUL_PERIOD u64 and AUTO_RECOVER u8 (recover op only), DUMP_TS and DUMP_TS_NS u64 (a
dump stored), AUTO_DUMP u8 (dump op only). With ``pad`` the u64s are preceded by a
zero-length DEVLINK_ATTR_PAD where their payload would not be 8-byte aligned, as
nla_put_u64_64bit does on architectures without efficient unaligned access.
"""

from __future__ import annotations

import calendar
import re
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path

from nicwatch.model import NetClass
from nicwatch.sources import devlink as dl
from nicwatch.sources.netlink import (
    NLM_F_DUMP,
    NLM_F_MULTI,
    NLMSG_DONE,
    NLMSGHDR,
    KernelError,
    split_replies,
)

DEVLINK = Path(__file__).resolve().parent.parent / "fixtures" / "devlink"
MLX5 = DEVLINK / "mlx5-cx6dx.txt"
IFS = {"enp8s0f0np0": 4, "enp8s0f1np1": 5}  # the mlx5 fixture's netdevs: ifindex
FAMILY_ID = 0x1c  # any dynamic genl id; the double checks requests carry it


def nla(kind: int, payload: bytes = b"") -> bytes:
    size = 4 + len(payload)
    return struct.pack("=HH", size, kind) + payload + bytes(-size % 4)


@dataclass
class TextReporter:
    handle: str
    port: int | None
    name: str
    fields: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class TextPort:
    handle: str
    index: int
    netdev: str | None
    flavour: str
    number: int | None
    pf: int | None = None
    vf: int | None = None


# iproute2's spelling of the port flavours (devlink/devlink.c port_flavour_name)
IPROUTE2_FLAVOURS = {"pcipf": "pci_pf", "pcivf": "pci_vf", "pcisf": "pci_sf"}


def parse_text(path: Path) -> tuple[list[TextReporter], list[TextPort]]:
    """Reporters of a `devlink health` text output (and ``#port`` lines: `devlink port
    show` lines kept in the fixture as comments)."""
    reporters: list[TextReporter] = []
    ports: list[TextPort] = []
    handle, port = "", None
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if line.startswith("#port "):
            words = line.split()[1:]
            h, _, index = words[0].rpartition("/")
            kv = dict(zip(words[1::2], words[2::2], strict=False))
            number = {k: int(kv[k]) if k in kv else None for k in ("port", "pfnum", "vfnum")}
            ports.append(TextPort(h, int(index), kv.get("netdev"),
                                  IPROUTE2_FLAVOURS.get(kv["flavour"], kv["flavour"]),
                                  number["port"], number["pfnum"], number["vfnum"]))
            continue
        if not line or line.startswith("#"):
            continue
        if line.endswith(":"):
            parts = line[:-1].split("/")
            handle = "/".join(parts[:2])
            port = int(parts[2]) if len(parts) > 2 else None
        elif line.startswith(("reporter ", "name ")):
            reporters.append(TextReporter(handle, port, line.split()[1]))
        else:
            words = line.split()
            reporters[-1].fields.update(zip(words[::2], words[1::2], strict=False))
    return reporters, ports


def dump_ns(fields: dict[str, str]) -> int | None:
    if "last_dump_date" not in fields:
        return None
    when = time.strptime(f"{fields['last_dump_date']} {fields['last_dump_time']}",
                         "%Y-%m-%d %H:%M:%S")
    return calendar.timegm(when) * 1_000_000_000


class _Message:
    """Attributes appended as the kernel's nla_put_* would, tracking the offset from the
    start of the netlink message for the u64 padding rule."""

    def __init__(self, pad: bool, start: int) -> None:
        self.out = bytearray()
        self.pad, self.start = pad, start

    def put(self, kind: int, payload: bytes = b"") -> None:
        self.out += nla(kind, payload)

    def u64(self, kind: int, value: int) -> None:
        if self.pad and (self.start + len(self.out) + 4) % 8:
            self.put(dl.DEVLINK_ATTR_PAD)
        self.put(kind, struct.pack("=Q", value))


def _handle_attrs(m: _Message, handle: str) -> None:
    bus, dev = handle.split("/", 1)
    m.put(dl.DEVLINK_ATTR_BUS_NAME, bus.encode() + b"\0")
    m.put(dl.DEVLINK_ATTR_DEV_NAME, dev.encode() + b"\0")


GENL = struct.Struct("=BBH")


def reporter_message(r: TextReporter, pad: bool = False, boot_ms: int = 0) -> bytes:
    """The genetlink payload (genlmsghdr + attributes) for one reporter."""
    m = _Message(pad, NLMSGHDR.size + GENL.size)
    _handle_attrs(m, r.handle)
    if r.port is not None:
        m.put(dl.DEVLINK_ATTR_PORT_INDEX, struct.pack("=I", r.port))
    nest = _Message(pad, m.start + len(m.out) + 4)
    f = r.fields
    nest.put(dl.DEVLINK_ATTR_HEALTH_REPORTER_NAME, r.name.encode() + b"\0")
    nest.put(dl.DEVLINK_ATTR_HEALTH_REPORTER_STATE,
             bytes([{"healthy": 0, "error": 1}.get(f["state"], 7)]))
    nest.u64(dl.DEVLINK_ATTR_HEALTH_REPORTER_ERR_COUNT, int(f["error"]))
    nest.u64(dl.DEVLINK_ATTR_HEALTH_REPORTER_RECOVER_COUNT, int(f["recover"]))
    if "grace_period" in f:
        nest.u64(dl.DEVLINK_ATTR_HEALTH_REPORTER_GRACEFUL_PERIOD, int(f["grace_period"]))
        nest.put(dl.DEVLINK_ATTR_HEALTH_REPORTER_AUTO_RECOVER,
                 bytes([f["auto_recover"] == "true"]))
    if (ns := dump_ns(f)) is not None:
        nest.u64(dl.DEVLINK_ATTR_HEALTH_REPORTER_DUMP_TS, boot_ms)
        nest.u64(dl.DEVLINK_ATTR_HEALTH_REPORTER_DUMP_TS_NS, ns)
    if "auto_dump" in f:
        nest.put(dl.DEVLINK_ATTR_HEALTH_REPORTER_AUTO_DUMP, bytes([f["auto_dump"] == "true"]))
    m.put(dl.DEVLINK_ATTR_HEALTH_REPORTER, bytes(nest.out))  # noflag nest
    return GENL.pack(dl.DEVLINK_CMD_HEALTH_REPORTER_GET, 1, 0) + bytes(m.out)


FLAVOURS = {v: k for k, v in dl.PORT_FLAVOURS.items()}


def port_message(p: TextPort, ifindex: int | None) -> bytes:
    m = _Message(False, NLMSGHDR.size + GENL.size)
    _handle_attrs(m, p.handle)
    m.put(dl.DEVLINK_ATTR_PORT_INDEX, struct.pack("=I", p.index))
    m.put(4, struct.pack("=H", 2))  # DEVLINK_ATTR_PORT_TYPE: ETH
    if p.netdev is not None:
        if ifindex is not None:
            m.put(dl.DEVLINK_ATTR_PORT_NETDEV_IFINDEX, struct.pack("=I", ifindex))
        m.put(dl.DEVLINK_ATTR_PORT_NETDEV_NAME, p.netdev.encode() + b"\0")
    m.put(dl.DEVLINK_ATTR_PORT_FLAVOUR, struct.pack("=H", FLAVOURS[p.flavour]))
    if p.number is not None:
        m.put(dl.DEVLINK_ATTR_PORT_NUMBER, struct.pack("=I", p.number))
    # PCI PF/VF numbers are u16 (devlink_nl_port_attrs_put, DEVLINK_PORT_FLAVOUR_PCI_VF)
    if p.pf is not None:
        m.put(dl.DEVLINK_ATTR_PORT_PCI_PF_NUMBER, struct.pack("=H", p.pf))
    if p.vf is not None:
        m.put(dl.DEVLINK_ATTR_PORT_PCI_VF_NUMBER, struct.pack("=H", p.vf))
    return GENL.pack(dl.DEVLINK_CMD_PORT_GET, 1, 0) + bytes(m.out)


@dataclass(frozen=True)
class TextInfo:
    handle: str
    fields: dict[str, str]
    versions: list[tuple[str, str, str]]  # (slot, name, value) in the text's order


def parse_info_text(path: Path) -> list[TextInfo]:
    """The instances of a `devlink dev info` text output (iproute2 devlink/devlink.c
    pr_out_info: handle line, then driver / serial_number / board.serial_number, then
    ``versions:`` with ``fixed:``, ``running:``, ``stored:`` groups of "name value" lines)."""
    infos: list[TextInfo] = []
    slot = None
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if not raw.startswith(" ") and line.endswith(":"):
            infos.append(TextInfo(line[:-1], {}, []))
            slot = None
        elif line in ("fixed:", "running:", "stored:"):
            slot = line[:-1]
        elif line == "versions:":
            continue
        else:
            name, value = line.split(None, 1)
            if slot is None:
                infos[-1].fields[name] = value
            else:
                infos[-1].versions.append((slot, name, value))
    return infos


VERSION_NESTS = {"fixed": dl.DEVLINK_ATTR_INFO_VERSION_FIXED,
                 "running": dl.DEVLINK_ATTR_INFO_VERSION_RUNNING,
                 "stored": dl.DEVLINK_ATTR_INFO_VERSION_STORED}
BOARD_SERIAL = 146  # DEVLINK_ATTR_INFO_BOARD_SERIAL_NUMBER (string), not read by nicwatch


def info_message(info: TextInfo) -> bytes:
    """One INFO_GET reply as devlink_nl_info_fill builds it: handle, driver name, serial
    numbers, then one noflag nest (NAME, VALUE strings) per version in the driver's order."""
    m = _Message(False, NLMSGHDR.size + GENL.size)
    _handle_attrs(m, info.handle)
    if "driver" in info.fields:
        m.put(dl.DEVLINK_ATTR_INFO_DRIVER_NAME, info.fields["driver"].encode() + b"\0")
    if "serial_number" in info.fields:
        m.put(dl.DEVLINK_ATTR_INFO_SERIAL_NUMBER, info.fields["serial_number"].encode() + b"\0")
    if "board.serial_number" in info.fields:
        m.put(BOARD_SERIAL, info.fields["board.serial_number"].encode() + b"\0")
    for slot, name, value in info.versions:
        nest = nla(dl.DEVLINK_ATTR_INFO_VERSION_NAME, name.encode() + b"\0") + nla(
            dl.DEVLINK_ATTR_INFO_VERSION_VALUE, value.encode() + b"\0")
        m.put(VERSION_NESTS[slot], nest)
    return GENL.pack(dl.DEVLINK_CMD_INFO_GET, 1, 0) + bytes(m.out)


def datagram(payloads: list[bytes], seq: int) -> bytes:
    """A dump's messages (NLM_F_MULTI) and its NLMSG_DONE in one datagram."""
    out = bytearray()
    for body in payloads:
        out += NLMSGHDR.pack(NLMSGHDR.size + len(body), FAMILY_ID, NLM_F_MULTI, seq, 0) + body
        out += bytes(-len(out) % 4)
    out += NLMSGHDR.pack(NLMSGHDR.size + 4, NLMSG_DONE, NLM_F_MULTI, seq, 0) + bytes(4)
    return bytes(out)


class KernelDouble(dl.DevlinkNetlink):
    """DevlinkNetlink whose socket is the kernel's side of the two dumps: each request is
    checked (family, DUMP flags, command) and answered with one datagram of messages in the
    kernel's layout, which the real reply path (split_replies, decoding) reads.
    ``ifindexes``: netdev name -> ifindex for PORT_NETDEV_IFINDEX."""

    def __init__(self, *fixtures: Path, ifindexes: dict[str, int] | None = None,
                 pad: bool = False, rename: dict[str, str] | None = None,
                 info: tuple[Path, ...] = (), info_errno: int | None = None) -> None:
        # no socket: nothing of NetlinkSocket.__init__. ``rename``: handle -> handle, to put
        # a fixture's devices at the PCI addresses of a sysfs fixture tree
        self._seq, self._family = 0, FAMILY_ID
        self.reporters: list[TextReporter] = []
        self.ports: list[TextPort] = []
        for path in fixtures:
            reporters, ports = parse_text(path)
            for old, new in (rename or {}).items():
                reporters = [TextReporter(new if r.handle == old else r.handle, r.port, r.name,
                                          r.fields) for r in reporters]
                ports = [TextPort(new if p.handle == old else p.handle, p.index, p.netdev,
                                  p.flavour, p.number, p.pf, p.vf) for p in ports]
            self.reporters += reporters
            self.ports += ports
        self.infos = [i for path in info for i in parse_info_text(path)]
        self.info_errno = info_errno  # answer INFO_GET with this error instead
        self.ifindexes = ifindexes or {}
        self.pad = pad
        self.requests: list[int] = []
        self.closed = False

    def _exchange(self, data: bytes, seq: int) -> list[bytes]:
        _len, family, flags, msg_seq, _pid = NLMSGHDR.unpack_from(data)
        cmd = data[NLMSGHDR.size]
        assert family == FAMILY_ID and flags & NLM_F_DUMP == NLM_F_DUMP and msg_seq == seq
        self.requests.append(cmd)
        if cmd == dl.DEVLINK_CMD_HEALTH_REPORTER_GET:
            # device reporters of each instance first, then its ports' (dump_one's order)
            payloads = [reporter_message(r, self.pad) for r in
                        sorted(self.reporters, key=lambda r: (r.handle, r.port is not None))]
        elif cmd == dl.DEVLINK_CMD_PORT_GET:
            payloads = [port_message(p, self.ifindexes.get(p.netdev or "")) for p in self.ports]
        elif cmd == dl.DEVLINK_CMD_INFO_GET:
            if self.info_errno is not None:
                raise KernelError(self.info_errno)
            payloads = [info_message(i) for i in self.infos]
        else:
            raise AssertionError(f"devlink command {cmd} is not a read nicwatch sends")
        replies, done = split_replies(datagram(payloads, seq), seq, GENL.size, strip=True)
        assert done
        return replies

    def close(self) -> None:
        self.closed = True


def pci_of(handle: str) -> str:
    return re.sub(r"^pci/", "", handle)


def netclass(name: str, ifindex: int | None, pci: str | None) -> NetClass:
    """A selected interface as the collector lists it (only what the mapping reads)."""
    return NetClass(name=name, ifindex=ifindex, address=None, operstate="up", mtu=1500,
                    speed_mbps=None, duplex=None, carrier=True, carrier_changes=None,
                    carrier_up_count=None, carrier_down_count=None, device_path=None,
                    pci_address=pci, driver="mlx5_core")


def kernel_has_devlink() -> bool:
    """Whether this kernel registered the devlink generic-netlink family."""
    try:
        dl.DevlinkNetlink().close()
    except dl.DevlinkUnavailable:
        return False
    return True
