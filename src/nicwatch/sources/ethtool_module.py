"""Pluggable module EEPROM (`ethtool -m`), read on the source's own thread and cadence.

Reading a module goes over the module's I2C bus, milliseconds per page, and needs
CAP_NET_ADMIN, so this source is opt-in (``--collector.module``) and never reads in the poll:
a worker thread reads every interface's module once per ``--collector.module.interval``
(default 60 s), and :meth:`EthtoolModuleSource.read` only copies the latest
:class:`~nicwatch.model.ModuleEeprom` and :class:`~nicwatch.model.ModuleReadStatus` of each
interface into the poll.

Kernel interface, per 128-byte half:

* ethtool netlink ``ETHTOOL_MSG_MODULE_EEPROM_GET`` (5.13+; ``net/ethtool/eeprom.c``): a
  request carries the header (DEV_INDEX), OFFSET, LENGTH, PAGE, I2C_ADDRESS and BANK; the
  kernel answers ``ETHTOOL_MSG_MODULE_EEPROM_GET_REPLY`` with the header and DATA.
  ``eeprom_parse_request()`` refuses (EINVAL) a missing OFFSET/LENGTH/PAGE/I2C_ADDRESS, a
  read that crosses offset 128 or 256, and the lower half of any page but 0; the policy
  bounds LENGTH to 1..128 and I2C_ADDRESS to 0..0x7f. The message needs CAP_NET_ADMIN in the
  namespace's user namespace (GENL_UNS_ADMIN_PERM): EPERM without it. A driver with only the
  legacy ``get_module_eeprom`` is served through the kernel's own fallback
  (``eeprom_fallback()``), so EOPNOTSUPP there means no module access at all.
* ethtool netlink ``ETHTOOL_MSG_MODULE_GET`` (5.16+; ``net/ethtool/module.c``), once per
  module read after its pages: the module power mode policy and mode, which the kernel puts
  in the reply only when the driver implements ``get_module_power_mode`` (unprivileged; a
  kernel without the message answers EOPNOTSUPP, and is not asked again).
* The legacy ioctls ``ETHTOOL_GMODULEINFO`` + ``ETHTOOL_GMODULEEEPROM``, when netlink says
  EOPNOTSUPP (a kernel before 5.13 answers an unknown generic netlink command so) or the
  kernel has no ethtool netlink family: one flat read of ``eeprom_len`` bytes, split into the
  same halves (SFF-8079/8472: A0h 0-255, A2h 256-511; SFF-8436/8636: lower, then upper pages
  00h-03h at 128 + 128 * page).

Which upper pages to read is the decoder's knowledge (``normalize.module.pages_to_read``),
handed in through :class:`~nicwatch.sources.SourceOptions` so that sources import nothing
above them.
"""

from __future__ import annotations

import errno
import struct
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from types import MappingProxyType
from typing import ClassVar, Protocol, runtime_checkable

import structlog

from nicwatch.model import ModuleEeprom, ModulePowerMode, ModuleReadStatus, Reading
from nicwatch.sources import Poll, SourceOptions, errno_name, threads
from nicwatch.sources.ethtool_ioctl import EthtoolError, EthtoolIoctl
from nicwatch.sources.ethtool_netlink import (
    ETHTOOL_A_HEADER_DEV_INDEX,
    ETHTOOL_GENL_VERSION,
    EthtoolNetlink,
    EthtoolNetlinkUnavailable,
)
from nicwatch.sources.netlink import (
    NLA_F_NESTED,
    KernelError,
    ParseError,
    attribute_index,
    nlattr,
    uint_attr,
)

log = structlog.get_logger("nicwatch")

# enum ETHTOOL_MSG_* (uapi ethtool_netlink.h): request (user to kernel) and reply.
ETHTOOL_MSG_MODULE_EEPROM_GET = 31
ETHTOOL_MSG_MODULE_EEPROM_GET_REPLY = 32

# enum ETHTOOL_A_MODULE_EEPROM_*.
ETHTOOL_A_MODULE_EEPROM_HEADER = 1
ETHTOOL_A_MODULE_EEPROM_OFFSET = 2  # u32
ETHTOOL_A_MODULE_EEPROM_LENGTH = 3  # u32
ETHTOOL_A_MODULE_EEPROM_PAGE = 4  # u8
ETHTOOL_A_MODULE_EEPROM_BANK = 5  # u8
ETHTOOL_A_MODULE_EEPROM_I2C_ADDRESS = 6  # u8
ETHTOOL_A_MODULE_EEPROM_DATA = 7  # binary

ETHTOOL_MSG_MODULE_GET = 34
ETHTOOL_MSG_MODULE_GET_REPLY = 35
# enum ETHTOOL_A_MODULE_*; values of enum ethtool_module_power_mode_policy / _mode (uapi
# ethtool.h).
ETHTOOL_A_MODULE_HEADER = 1
ETHTOOL_A_MODULE_POWER_MODE_POLICY = 2  # u8
ETHTOOL_A_MODULE_POWER_MODE = 3  # u8
POWER_MODE_POLICIES: Mapping[int, str] = MappingProxyType({1: "high", 2: "auto"})
POWER_MODES: Mapping[int, str] = MappingProxyType({1: "low", 2: "high"})

HALF = 128  # ETH_MODULE_EEPROM_PAGE_LEN: one request reads at most one half page
A0, A2 = 0x50, 0x51  # the module's I2C addresses (SFF-8472 A0h/A2h)

# Legacy ETHTOOL_GMODULEINFO types (uapi ethtool.h ETH_MODULE_SFF_*).
ETH_MODULE_SFF_8079 = 0x1
ETH_MODULE_SFF_8472 = 0x2
ETH_MODULE_SFF_8636 = 0x3
ETH_MODULE_SFF_8436 = 0x4

DEFAULT_INTERVAL = 60.0

# Errno -> state; anything else is "failed" (counted). EOPNOTSUPP: the driver (or a kernel
# without the message) has no module access; ENODEV/EIO: no module answers, as drivers report
# an empty cage (sfp: ENODEV; mlx5 and others: EIO from the firmware's I2C access).
STATES: Mapping[int, str] = MappingProxyType({
    errno.EOPNOTSUPP: "unsupported",
    errno.ENODEV: "absent",
    errno.EIO: "absent",
    errno.EPERM: "not_permitted",
    errno.EACCES: "not_permitted",
    # The kernel refuses module EEPROM reads with EBUSY while it flashes the module's
    # firmware (net/ethtool/eeprom.c, ioctl.c: module_fw_flash_in_progress, 6.11+); the last
    # good reading stays, as for failed.
    errno.EBUSY: "busy",
})
NOT_COUNTED = frozenset(STATES.values())

Page = tuple[int, int, int]  # (i2c address, bank, page)
PagePlan = Callable[[bytes, bytes | None, bytes | None], Sequence[Page]]
"""The decoder's plan: upper pages to read from the lower half of A0h and, once read, CMIS
page 01h (which advertises the banks of lanes 9-32 and VDM) and page 2Fh (the VDM groups)."""


def first_page(lower: bytes, page_01h: bytes | None = None,
               page_2fh: bytes | None = None) -> list[Page]:
    """The plan without a decoder: upper page 00h of A0h, which every map uses for identity."""
    return [(A0, 0, 0)]


class ModuleReadError(Exception):
    """Reading a module failed; ``errno`` is the kernel's (None for a reply that does not
    parse), ``kind`` its errno name or ``parse``."""

    def __init__(self, number: int | None, message: str) -> None:
        super().__init__(message)
        self.errno = number

    @property
    def kind(self) -> str:
        return "parse" if self.errno is None else errno_name(self.errno)

    @property
    def state(self) -> str:
        return STATES.get(self.errno, "failed") if self.errno is not None else "failed"


# --- netlink ---------------------------------------------------------------------------------


def eeprom_request(ifindex: int, i2c: int, bank: int, page: int, offset: int,
                   length: int) -> bytes:
    """The attributes of one MODULE_EEPROM_GET request, every one eeprom.c requires."""
    header = nlattr(ETHTOOL_A_HEADER_DEV_INDEX, struct.pack("=I", ifindex))
    return b"".join((
        nlattr(ETHTOOL_A_MODULE_EEPROM_HEADER | NLA_F_NESTED, header),
        nlattr(ETHTOOL_A_MODULE_EEPROM_OFFSET, struct.pack("=I", offset)),
        nlattr(ETHTOOL_A_MODULE_EEPROM_LENGTH, struct.pack("=I", length)),
        nlattr(ETHTOOL_A_MODULE_EEPROM_PAGE, struct.pack("=B", page)),
        nlattr(ETHTOOL_A_MODULE_EEPROM_BANK, struct.pack("=B", bank)),
        nlattr(ETHTOOL_A_MODULE_EEPROM_I2C_ADDRESS, struct.pack("=B", i2c)),
    ))


def power_mode_request(ifindex: int) -> bytes:
    """The attributes of a MODULE_GET request: the header with DEV_INDEX."""
    header = nlattr(ETHTOOL_A_HEADER_DEV_INDEX, struct.pack("=I", ifindex))
    return nlattr(ETHTOOL_A_MODULE_HEADER | NLA_F_NESTED, header)


def power_mode_reply(attrs: bytes) -> ModulePowerMode | None:
    """The power mode of a MODULE_GET reply; None when the driver reported neither attribute
    (``module_fill_reply()`` puts each only when non-zero)."""
    index = attribute_index(attrs, 0, len(attrs))
    policy = uint_attr(attrs, index, ETHTOOL_A_MODULE_POWER_MODE_POLICY)
    mode = uint_attr(attrs, index, ETHTOOL_A_MODULE_POWER_MODE)
    if not policy and not mode:
        return None
    return ModulePowerMode(POWER_MODE_POLICIES.get(policy, "unknown") if policy else None,
                           POWER_MODES.get(mode, "unknown") if mode else None)


def eeprom_reply_data(attrs: bytes) -> bytes:
    """DATA of one MODULE_EEPROM_GET reply (attributes after the genlmsghdr)."""
    span = attribute_index(attrs, 0, len(attrs)).get(ETHTOOL_A_MODULE_EEPROM_DATA)
    if span is None:
        raise ParseError("MODULE_EEPROM_GET reply without ETHTOOL_A_MODULE_EEPROM_DATA")
    return attrs[span[0]:span[1]]


class ModuleNetlink(EthtoolNetlink):
    """The ethtool generic netlink socket, asking for module EEPROM halves one at a time.
    Raises EthtoolNetlinkUnavailable without the ethtool family. Not thread-safe: the module
    source's worker owns its own."""

    def half(self, ifindex: int, i2c: int, bank: int, page: int, upper: bool) -> bytes:
        """Bytes 0-127 (``upper`` False, page 0 only) or 128-255 of a page; raises
        KernelError, ParseError or OSError."""
        body = eeprom_request(ifindex, i2c, bank, page, HALF if upper else 0, HALF)
        replies = self.genl_request(ETHTOOL_MSG_MODULE_EEPROM_GET, 0, body, ETHTOOL_GENL_VERSION)
        if len(replies) != 1:
            raise ParseError(f"{len(replies)} replies to MODULE_EEPROM_GET")
        return eeprom_reply_data(replies[0])

    def power_mode(self, ifindex: int) -> ModulePowerMode | None:
        """The module power mode policy and mode (MODULE_GET); None when the driver reports
        neither. Raises KernelError (EOPNOTSUPP before kernel 5.16), ParseError or OSError."""
        replies = self.genl_request(ETHTOOL_MSG_MODULE_GET, 0, power_mode_request(ifindex),
                                    ETHTOOL_GENL_VERSION)
        if len(replies) != 1:
            raise ParseError(f"{len(replies)} replies to MODULE_GET")
        return power_mode_reply(replies[0])


@runtime_checkable
class HalfReader(Protocol):
    """What reads halves and the power mode: ModuleNetlink, or a double of the kernel's
    replies."""

    def half(self, ifindex: int, i2c: int, bank: int, page: int, upper: bool) -> bytes: ...
    def power_mode(self, ifindex: int) -> ModulePowerMode | None: ...
    def close(self) -> None: ...


# --- legacy ioctl ----------------------------------------------------------------------------


def legacy_halves(module_type: int, flat: bytes) -> tuple[dict[int, bytes],
                                                          dict[Page, bytes]]:
    """The flat ETHTOOL_GMODULEEEPROM layout split into the halves ModuleEeprom holds."""
    lower: dict[int, bytes] = {}
    upper: dict[Page, bytes] = {}

    def put(i2c: int, page: int | None, start: int) -> None:
        chunk = flat[start:start + HALF]
        if chunk:
            if page is None:
                lower[i2c] = chunk
            else:
                upper[(i2c, 0, page)] = chunk

    put(A0, None, 0)
    put(A0, 0, HALF)
    if module_type == ETH_MODULE_SFF_8472:
        put(A2, None, 2 * HALF)
        put(A2, 0, 3 * HALF)
    elif module_type in (ETH_MODULE_SFF_8636, ETH_MODULE_SFF_8436):
        for page in range(1, (len(flat) - HALF) // HALF):
            put(A0, page, HALF * (page + 1))
    return lower, upper


# --- one module ------------------------------------------------------------------------------


class KernelModuleReader:
    """Reads one interface's module: netlink by page (``netlink``), else the legacy ioctls
    (``ioctl``); either may be None. ``pages``: the decoder's plan of upper pages, from the
    lower half of A0h."""

    def __init__(self, netlink: HalfReader | None, ioctl: EthtoolIoctl | None,
                 pages: PagePlan = first_page, clock: Callable[[], float] = time.time) -> None:
        self.netlink = netlink
        self.ioctl = ioctl
        self.pages = pages
        self.clock = clock
        self._power_mode = True  # False once the kernel answered MODULE_GET with EOPNOTSUPP

    def read_module(self, ifindex: int, ifname: str,
                    should_stop: Callable[[], bool] = lambda: False) -> ModuleEeprom | None:
        """The module's EEPROM (None: stopped halfway); raises ModuleReadError."""
        if self.netlink is not None:
            try:
                return self._read_netlink(ifindex, should_stop)
            except ModuleReadError as e:
                if e.errno != errno.EOPNOTSUPP or self.ioctl is None:
                    raise
        if self.ioctl is None:
            raise ModuleReadError(errno.EOPNOTSUPP, f"{ifname}: no module EEPROM access")
        return self._read_ioctl(ifname)

    def _half(self, ifindex: int, i2c: int, bank: int, page: int, upper: bool) -> bytes:
        assert self.netlink is not None
        try:
            return self.netlink.half(ifindex, i2c, bank, page, upper)
        except KernelError as e:
            raise ModuleReadError(e.errno, f"ifindex {ifindex}: MODULE_EEPROM_GET "
                                  f"i2c {i2c:#x} bank {bank} page {page:#x}: {e}") from None
        except ParseError as e:
            raise ModuleReadError(None, f"ifindex {ifindex}: MODULE_EEPROM_GET: {e}") from None
        except OSError as e:
            raise ModuleReadError(e.errno, f"ifindex {ifindex}: MODULE_EEPROM_GET: {e}") from None

    def _read_netlink(self, ifindex: int, should_stop: Callable[[], bool]) -> ModuleEeprom | None:
        lower = {A0: self._half(ifindex, A0, 0, 0, False)}
        upper: dict[Page, bytes] = {}
        tried: set[Page] = set()
        plan = list(self.pages(lower[A0], None, None))
        while plan:
            for i2c, bank, page in plan:
                if should_stop():
                    return None
                tried.add((i2c, bank, page))
                try:
                    if i2c not in lower and page == 0 and bank == 0:
                        lower[i2c] = self._half(ifindex, i2c, 0, 0, False)
                    upper[(i2c, bank, page)] = self._half(ifindex, i2c, bank, page, True)
                except ModuleReadError as e:
                    # A page the module does not implement (EINVAL from the kernel or driver,
                    # EIO from the module): left out, the decoders decode what is there.
                    if e.errno not in (errno.EINVAL, errno.EIO, errno.EOPNOTSUPP):
                        raise
            # Page 01h, once read, may name more pages (CMIS banks of lanes 9-32, VDM page
            # 2Fh), and page 2Fh the VDM groups' pages.
            plan = [p for p in self.pages(lower[A0], upper.get((A0, 0, 1)),
                                          upper.get((A0, 0, 0x2F))) if p not in tried]
        return ModuleEeprom(MappingProxyType(lower), MappingProxyType(upper), self.clock(),
                            self._power(ifindex))

    def _power(self, ifindex: int) -> ModulePowerMode | None:
        """MODULE_GET's power mode; None when not reported or not readable (the EEPROM read
        stands either way)."""
        if not self._power_mode or self.netlink is None:
            return None
        try:
            return self.netlink.power_mode(ifindex)
        except KernelError as e:
            if e.errno == errno.EOPNOTSUPP:
                self._power_mode = False  # kernel before 5.16: the message does not exist
            log.debug("module_power_mode_unreadable", ifindex=ifindex, error=str(e))
        except (ParseError, OSError) as e:
            log.debug("module_power_mode_unreadable", ifindex=ifindex, error=str(e))
        return None

    def _read_ioctl(self, ifname: str) -> ModuleEeprom:
        assert self.ioctl is not None
        try:
            module_type, length = self.ioctl.module_info(ifname)
            flat = self.ioctl.module_eeprom(ifname, 0, length) if length else b""
        except EthtoolError as e:
            raise ModuleReadError(e.errno, str(e)) from None
        if not flat:
            raise ModuleReadError(errno.EIO, f"{ifname}: module EEPROM of 0 bytes")
        lower, upper = legacy_halves(module_type, flat)
        return ModuleEeprom(MappingProxyType(lower), MappingProxyType(upper), self.clock())

    def close(self) -> None:
        for handle in (self.netlink, self.ioctl):
            if handle is not None:
                handle.close()


@runtime_checkable
class ModuleReader(Protocol):
    """What EthtoolModuleSource wraps: KernelModuleReader, or a test double."""

    def read_module(self, ifindex: int, ifname: str,
                    should_stop: Callable[[], bool] = ...) -> ModuleEeprom | None: ...
    def close(self) -> None: ...


# --- the source ------------------------------------------------------------------------------


class _State:
    """One interface as the worker last found it."""

    __slots__ = ("eeprom", "errors", "status")

    def __init__(self) -> None:
        self.eeprom: ModuleEeprom | None = None
        self.status: ModuleReadStatus | None = None
        self.errors: dict[str, int] = {}


class EthtoolModuleSource:
    """Module EEPROMs as a :class:`~nicwatch.sources.Source`, read by a worker thread every
    ``interval`` seconds; ``read(poll)`` only copies the latest results (``module``,
    ``module_read``) into the poll and tells the worker which interfaces there are.

    A module that reads keeps its last EEPROM (with its ``read_at``) through later failed
    attempts, so the age shows; one that turns out unsupported or absent drops it. Each
    interface's state change is logged once; EPERM once for the whole source, with the
    capability it lacks.
    """

    name = "module"
    fills: ClassVar[frozenset[str]] = frozenset({"module", "module_read"})
    needs: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, reader: ModuleReader, interval: float = DEFAULT_INTERVAL,
                 clock: Callable[[], float] = time.time) -> None:
        self.reader = reader
        self.interval = interval
        self._clock = clock
        self._lock = threading.Lock()
        self._wanted: tuple[tuple[str, int], ...] = ()
        self._wanted_names: frozenset[str] = frozenset()
        self._states: dict[str, _State] = {}
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._permission_logged = False
        self.cycles = 0  # completed passes over the interfaces (tests, benchmarks)
        self._cycled = threading.Event()  # set after the first completed pass

    @classmethod
    def open(cls, options: SourceOptions) -> EthtoolModuleSource | None:
        """None unless ``--collector.module``; without any kernel path, None (logged)."""
        if not options.module:
            return None
        try:
            netlink: ModuleNetlink | None = ModuleNetlink()
        except (EthtoolNetlinkUnavailable, OSError) as e:
            log.info("module_netlink_unavailable", error=str(e), fallback="ioctl")
            netlink = None
        try:
            ioctl: EthtoolIoctl | None = EthtoolIoctl()
        except OSError as e:
            if netlink is None:
                log.warning("module_collector_unavailable", error=str(e))
                return None
            ioctl = None
        return cls(KernelModuleReader(netlink, ioctl, options.module_pages or first_page),
                   options.module_interval)

    # --- the poll's side -------------------------------------------------------------------

    def read(self, poll: Poll) -> None:
        wanted = tuple((nc.name, nc.ifindex) for nc in poll.interfaces if nc.ifindex)
        with self._lock:
            changed = wanted != self._wanted
            if changed:
                self._wanted = wanted
                self._wanted_names = frozenset(name for name, _ in wanted)
            latest = [(name, state.eeprom, state.status) for name, _ in wanted
                      if (state := self._states.get(name)) is not None and state.status]
        for name, eeprom, status in latest:
            if eeprom is not None:
                poll.put(name, Reading.module, eeprom)
            poll.put(name, Reading.module_read, status)
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="nicwatch-module",
                                             daemon=True)
            threads.start(self._thread)  # with the daemon's signals blocked
        elif changed:
            self._wake.set()  # a new interface is read now, not a cadence later

    def wait_first_read(self, timeout: float) -> bool:
        """Wait until every interface of the last poll was read once (for one-shot commands
        such as `nicwatch show`; the daemon never waits); False on timeout."""
        return self._cycled.wait(timeout)

    def close(self) -> None:
        """Stop the worker (it checks between halves, so within one I2C read) and close the
        kernel handles."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
        self.reader.close()

    # --- the worker ------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.clear()
            with self._lock:
                wanted = self._wanted
            self._cycle(wanted)
            if not self._stop.is_set():
                self.cycles += 1
                self._cycled.set()
            self._wake.wait(self.interval)

    def _cycle(self, wanted: Collection[tuple[str, int]]) -> None:
        present = {name for name, _ in wanted}
        with self._lock:
            for name in self._states.keys() - present:
                del self._states[name]  # gone: its values go with it
        for name, ifindex in wanted:
            if self._stop.is_set():
                return
            try:
                eeprom = self.reader.read_module(ifindex, name, self._stop.is_set)
            except ModuleReadError as e:
                self._failed(name, e)
                continue
            except Exception as e:  # a reader bug must not end the thread
                log.debug("module_read_crashed", device=name, exc_info=True)
                self._failed(name, ModuleReadError(None, f"{type(e).__name__}: {e}"))
                continue
            if eeprom is None:  # stopped halfway
                return
            self._update(name, "ok", eeprom=eeprom)

    def _failed(self, name: str, error: ModuleReadError) -> None:
        state = error.state
        if state == "not_permitted" and not self._permission_logged:
            self._permission_logged = True
            log.warning("module_read_not_permitted", device=name, error=error.kind,
                        hint="reading module EEPROM needs CAP_NET_ADMIN")
        self._update(name, state, error=error)

    def _update(self, name: str, state: str, eeprom: ModuleEeprom | None = None,
                error: ModuleReadError | None = None) -> None:
        with self._lock:
            if name not in self._wanted_names:
                return  # went away while it was read
            current = self._states.setdefault(name, _State())
            previous = current.status.state if current.status else None
            if eeprom is not None:
                current.eeprom = eeprom
            elif state in ("unsupported", "absent"):
                current.eeprom = None
            if error is not None and state not in NOT_COUNTED:
                current.errors[error.kind] = current.errors.get(error.kind, 0) + 1
            current.status = ModuleReadStatus(state, self._clock(),
                                              MappingProxyType(dict(current.errors)))
        if state != previous:
            if state == "ok":  # a recovery is news; the first good read is not
                (log.debug if previous is None else log.info)("module_read", device=name,
                                                               previous=previous)
            elif state != "not_permitted":
                log.info("module_unreadable", device=name, state=state,
                         error=error.kind if error else None,
                         message=str(error) if error else None)
