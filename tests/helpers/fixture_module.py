"""A double of the kernel's ETHTOOL_MSG_MODULE_EEPROM_GET, answering from a real module's EEPROM
(tests/fixtures/module/), of ETHTOOL_MSG_MODULE_GET (the power mode, net/ethtool/module.c),
and of the legacy module ioctls.

The netlink double sits where the socket is: it takes the request bytes
:class:`~nicwatch.sources.ethtool_module.ModuleNetlink` sends, checks them as the kernel does
(net/ethtool/eeprom.c ``eeprom_parse_request()`` and the attribute policy: OFFSET, LENGTH,
PAGE and I2C_ADDRESS required, LENGTH 1..128, I2C_ADDRESS <= 0x7f, no lower half of a page
other than 0, no read across offset 128 or 256), and answers with the datagram the kernel
builds (nlmsghdr, genlmsghdr with MODULE_EEPROM_GET_REPLY, the header nest with DEV_INDEX and
DEV_NAME as ``ethnl_fill_reply_header()`` writes it, then DATA), or with an NLMSG_ERROR. The
reply goes through the project's real framing decoder. MODULE_GET is answered as
``module_fill_reply()`` does: the header, then POWER_MODE_POLICY and POWER_MODE only when the
driver reports them (here: the ModuleEeprom's ``power``; None is a driver without
``get_module_power_mode``). Numbers are spelled out here from
include/uapi/linux/ethtool_netlink.h and ethtool.h, not taken from the module under test.
"""

from __future__ import annotations

import errno
import struct
import time
from pathlib import Path

from nicwatch.model import ModuleEeprom
from nicwatch.normalize.module import hexdump
from nicwatch.sources import netlink
from nicwatch.sources.ethtool_ioctl import EthtoolError
from nicwatch.sources.ethtool_module import ModuleNetlink

from paths import FIXTURES

MODULE = FIXTURES / "module"
FAMILY = 0x1A  # an ethtool family id as the controller might hand it out
GET, GET_REPLY = 31, 32  # ETHTOOL_MSG_MODULE_EEPROM_GET(_REPLY)
A_HEADER, A_OFFSET, A_LENGTH, A_PAGE, A_BANK, A_I2C, A_DATA = 1, 2, 3, 4, 5, 6, 7
MODULE_GET, MODULE_GET_REPLY = 34, 35  # ETHTOOL_MSG_MODULE_GET(_REPLY)
A_MODULE_HEADER, A_POWER_MODE_POLICY, A_POWER_MODE = 1, 2, 3
POLICY_CODES = {"high": 1, "auto": 2}  # enum ethtool_module_power_mode_policy
MODE_CODES = {"low": 1, "high": 2}  # enum ethtool_module_power_mode
HEADER_DEV_INDEX, HEADER_DEV_NAME = 1, 2
NLMSG_ERROR = 2
NLA_F_NESTED = 0x8000


def fixture_eeprom(name: str) -> ModuleEeprom:
    """A real module's EEPROM from its `ethtool -m hex on` dump."""
    return hexdump.parse((MODULE / name).read_text()).eeprom


def _nla(attr_type: int, payload: bytes) -> bytes:
    length = 4 + len(payload)
    return struct.pack("=HH", length, attr_type) + payload + b"\0" * (-length % 4)


def _attrs(data: bytes) -> dict[int, bytes]:
    out, pos = {}, 0
    while pos < len(data):
        length, attr_type = struct.unpack_from("=HH", data, pos)
        out[attr_type & 0x3FFF] = data[pos + 4:pos + length]
        pos += (length + 3) & ~3
    return out


class KernelModuleEeprom(ModuleNetlink):
    """ModuleNetlink whose socket is this double. ``modules``: ifindex -> (ifname,
    ModuleEeprom); ``errors``: ifindex -> errno every request for it gets (EPERM, EOPNOTSUPP,
    ...); a half the module lacks is EIO, as an I2C read of a page the module does not
    implement. ``delay``: seconds each request takes (the I2C time). ``requests`` records
    (ifindex, i2c, bank, page, offset, length) of each request."""

    def __init__(self, modules: dict[int, tuple[str, ModuleEeprom]],
                 errors: dict[int, int] | None = None, delay: float = 0.0,
                 module_get: int | None = None) -> None:
        """``module_get``: an errno every MODULE_GET gets (EOPNOTSUPP: a kernel before 5.16,
        whose generic netlink does not know the command)."""
        self._family = FAMILY
        self._seq = 0
        self.modules = modules
        self.errors = dict(errors or {})
        self.module_get = module_get
        self.power_requests = 0
        self.delay = delay
        self.requests: list[tuple[int, int, int, int, int, int]] = []
        self.closed = False

    def close(self) -> None:
        self.closed = True

    def request(self, msg_type: int, flags: int, body: bytes) -> list[bytes]:
        self._seq += 1
        datagram = self.kernel(msg_type, flags, body, self._seq)
        replies, done = netlink.split_replies(datagram, self._seq, 4, strip=True)
        assert done
        return replies

    # --- what the kernel does with the request ----------------------------------------------

    def kernel(self, msg_type: int, flags: int, body: bytes, seq: int) -> bytes:
        assert msg_type == FAMILY and flags & ~0x1 == 0, (msg_type, flags)  # a plain GET
        cmd, _version, _ = struct.unpack_from("=BBH", body)
        assert cmd in (GET, MODULE_GET), cmd
        tb = _attrs(body[4:])
        header = _attrs(tb[A_HEADER])
        ifindex = struct.unpack("=I", header[HEADER_DEV_INDEX])[0]
        if cmd == MODULE_GET:
            return self._module_get(ifindex, seq)
        if ifindex in self.errors:
            return self._error(seq, self.errors[ifindex])
        if ifindex not in self.modules:
            return self._error(seq, errno.ENODEV)
        if any(a not in tb for a in (A_OFFSET, A_LENGTH, A_PAGE, A_I2C)):
            return self._error(seq, errno.EINVAL)
        offset, length = (struct.unpack("=I", tb[a])[0] for a in (A_OFFSET, A_LENGTH))
        page, i2c = tb[A_PAGE][0], tb[A_I2C][0]
        bank = tb[A_BANK][0] if A_BANK in tb else 0
        if not 1 <= length <= 128 or i2c > 0x7F:  # policy ranges
            return self._error(seq, errno.ERANGE)
        if page and offset < 128:
            return self._error(seq, errno.EINVAL)
        if offset < 128 < offset + length or offset + length > 256:
            return self._error(seq, errno.EINVAL)
        self.requests.append((ifindex, i2c, bank, page, offset, length))
        if self.delay:
            time.sleep(self.delay)
        ifname, eeprom = self.modules[ifindex]
        half = (eeprom.lower.get(i2c) if offset < 128 and bank == 0
                else eeprom.upper.get((i2c, bank, page)))
        start = offset % 128
        if half is None or len(half) < start + length:
            return self._error(seq, errno.EIO)
        header = _nla(HEADER_DEV_INDEX, struct.pack("=I", ifindex)) + _nla(
            HEADER_DEV_NAME, ifname.encode() + b"\0")
        payload = (struct.pack("=BBH", GET_REPLY, 1, 0) + _nla(A_HEADER | NLA_F_NESTED, header)
                   + _nla(A_DATA, half[start:start + length]))
        return struct.pack("=IHHII", 16 + len(payload), FAMILY, 0, seq, 4242) + payload

    def _module_get(self, ifindex: int, seq: int) -> bytes:
        self.power_requests += 1
        if self.module_get is not None:
            return self._error(seq, self.module_get)
        if ifindex not in self.modules:
            return self._error(seq, errno.ENODEV)
        ifname, eeprom = self.modules[ifindex]
        header = _nla(HEADER_DEV_INDEX, struct.pack("=I", ifindex)) + _nla(
            HEADER_DEV_NAME, ifname.encode() + b"\0")
        attrs = _nla(A_MODULE_HEADER | NLA_F_NESTED, header)
        power = eeprom.power
        if power is not None and power.policy:
            attrs += _nla(A_POWER_MODE_POLICY, bytes([POLICY_CODES[power.policy]]))
        if power is not None and power.mode:
            attrs += _nla(A_POWER_MODE, bytes([MODE_CODES[power.mode]]))
        payload = struct.pack("=BBH", MODULE_GET_REPLY, 1, 0) + attrs
        return struct.pack("=IHHII", 16 + len(payload), FAMILY, 0, seq, 4242) + payload

    @staticmethod
    def _error(seq: int, number: int) -> bytes:
        # struct nlmsgerr: error, then the offending request's nlmsghdr (16 bytes, capped).
        payload = struct.pack("=i", -number) + struct.pack("=IHHII", 16, FAMILY, 1, seq, 0)
        return struct.pack("=IHHII", 16 + len(payload), NLMSG_ERROR, 0x100, seq, 4242) + payload


class LegacyModuleIoctl:
    """The two legacy ioctls over a flat EEPROM as ETHTOOL_GMODULEEEPROM returns it
    (ethtool_get_any_eeprom(): EINVAL past eeprom_len)."""

    def __init__(self, module_type: int, flat: bytes) -> None:
        self.module_type = module_type
        self.flat = flat
        self.closed = False

    def module_info(self, ifname: str) -> tuple[int, int]:
        return self.module_type, len(self.flat)

    def module_eeprom(self, ifname: str, offset: int, length: int) -> bytes:
        if offset + length > len(self.flat):
            raise EthtoolError(errno.EINVAL, f"{ifname}: past eeprom_len")
        return self.flat[offset:offset + length]

    def close(self) -> None:
        self.closed = True


def flat_bytes(path: Path) -> bytes:
    """The bytes of a flat `ethtool -m hex on` dump, in order (the legacy ioctl's layout)."""
    out = bytearray()
    for line in path.read_text().splitlines():
        head, _, rest = line.partition(":")
        if head.strip().startswith("0x") and rest.strip():
            out += bytes(int(b, 16) for b in rest.split())
    return bytes(out)


# Checksum bytes of each map (SFF-8472 8.3 / 9.2, SFF-8636 6.3, CMIS 8.3-8.4): (half, byte,
# first, last) with offsets within the half page.
_SEALS = {
    "sff8472": ((0x50, 63, 0, 62), (0x50, 95, 64, 94), (0x51, 95, 0, 94)),
    "sff8636": (((0x50, 0, 0), 63, 0, 62), ((0x50, 0, 0), 95, 64, 94)),
    "cmis": (((0x50, 0, 0), 94, 0, 93), ((0x50, 0, 1), 127, 2, 126),
             ((0x50, 0, 2), 127, 0, 126)),
}


def resealed(eeprom: ModuleEeprom) -> ModuleEeprom:
    """``eeprom`` with every checksum byte recomputed, as a module programmed with those bytes
    holds them: for variants of real dumps built from the specs' layouts."""
    from nicwatch.normalize.module import identify
    lower, upper = dict(eeprom.lower), dict(eeprom.upper)
    for key, at, first, last in _SEALS.get(identify(eeprom) or "", ()):
        store = lower if isinstance(key, int) else upper
        half = store.get(key)
        if half is None or len(half) <= max(at, last):
            continue
        data = bytearray(half)
        data[at] = sum(data[first:last + 1]) & 0xFF
        store[key] = bytes(data)
    return ModuleEeprom(lower, upper, eeprom.read_at, eeprom.power)
