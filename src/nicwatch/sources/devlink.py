"""Device health reporters and the port <-> netdev map from the kernel's devlink family.

devlink is the kernel's interface to a network device as a whole (a PCI function, not a
netdev). Its health reporters are what a driver tells the kernel about errors it detected and
recovered from: mlx5 registers ``fw``, ``fw_fatal`` and ``vnic`` on the device and ``tx``
and ``rx`` on the uplink port (TX timeouts, error completions, firmware syndromes). They are
invisible in every counter until traffic suffers. ``devlink health show`` prints them.

Per poll, two dumps over one generic netlink socket (family ``devlink``, resolved through the
controller as :mod:`nicwatch.sources.ethtool_netlink` resolves ``ethtool``):

* ``DEVLINK_CMD_HEALTH_REPORTER_GET``: one message per reporter of every devlink instance in
  the socket's network namespace, device reporters first, then each port's
  (``devlink_nl_health_reporter_get_dump_one``, net/devlink/health.c). A message holds the
  handle (``BUS_NAME``, ``DEV_NAME``), ``PORT_INDEX`` for a port reporter, and the
  ``HEALTH_REPORTER`` nest (started without NLA_F_NESTED) with NAME, STATE (u8: 0 healthy,
  1 error), ERR_COUNT and RECOVER_COUNT (u64), GRACEFUL_PERIOD (u64, ms) and AUTO_RECOVER (u8)
  only for a reporter with a recover operation, DUMP_TS (u64 jiffies in ms since boot) and
  DUMP_TS_NS (u64 wall-clock ns, Linux 5.6) only while a dump is stored, AUTO_DUMP (u8, 5.8)
  only for a reporter with a dump operation. u64 values go through ``nla_put_u64_64bit``,
  which may put a zero-length ``DEVLINK_ATTR_PAD`` before them: skipped like any unknown
  attribute.
* ``DEVLINK_CMD_PORT_GET``: one message per port (net/devlink/port.c,
  ``devlink_nl_port_fill``): handle, PORT_INDEX, PORT_NETDEV_IFINDEX / PORT_NETDEV_NAME
  when the port has a netdev, PORT_FLAVOUR and, for physical ports, PORT_NUMBER (plus
  PORT_SPLIT_GROUP and PORT_SPLIT_SUBPORT_NUMBER for a split port), for PCI function ports
  PORT_PCI_PF_NUMBER / PORT_PCI_VF_NUMBER.

* ``DEVLINK_CMD_INFO_GET`` (every ``INFO_SECONDS``, reused in between: a driver answers it
  from firmware, mlx5 with MCQI/MCQS register reads): one message per instance
  (net/devlink/dev.c ``devlink_nl_info_fill``): handle, INFO_DRIVER_NAME, INFO_SERIAL_NUMBER
  and INFO_BOARD_SERIAL_NUMBER where the driver has them, then one nest per version,
  INFO_VERSION_FIXED / _RUNNING / _STORED, each opened with ``nla_nest_start_noflag``
  around INFO_VERSION_NAME and INFO_VERSION_VALUE strings (``devlink_info_version_put``;
  from 6.15 a version with an empty value is left out). An instance whose driver has no
  info_get, or answers EOPNOTSUPP, is left out of the dump.

Numbers are the uapi enums of ``include/uapi/linux/devlink.h``; both dumps run for any user:
their genl ops carry no GENL_ADMIN_PERM (net/devlink/netlink_gen.c), unlike the SET,
RECOVER and DUMP_GET commands, which nicwatch never sends.

Each selected interface gets the reporters that concern it: the device reporters of the
devlink instance its devlink port names (any bus: ``pci``, ``netdevsim``, ``auxiliary``
for mlx5 sub-functions) and of ``pci/<its PCI function>``, and the reporters of the devlink
port whose netdev it is; and the number of ``pci_vf`` ports of its instance (VF
representors, present only in switchdev e-switch mode), which tells normalize whether the
driver's legacy-mode VF counters mean anything. A kernel without the devlink family
(CONFIG_NET_DEVLINK=n: no driver that needs it) means the source is left out at start with
one log line; a device without devlink support just has no reporters.
"""

from __future__ import annotations

import dataclasses
import errno
import time
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import ClassVar, Protocol, runtime_checkable

import structlog

from nicwatch.model import (
    DevlinkHealthReporter,
    DevlinkInfo,
    DevlinkPort,
    DevlinkVersion,
    NetClass,
    Reading,
)
from nicwatch.sources import Poll, SourceOptions, errno_name
from nicwatch.sources.netlink import (
    NLM_F_DUMP,
    FamilyUnavailable,
    GenericNetlinkSocket,
    KernelError,
    ParseError,
    Span,
    attribute_index,
    attributes,
    string_attr,
    uint_attr,
)

log = structlog.get_logger("nicwatch")

DEVLINK_GENL_NAME = "devlink"

# enum devlink_command
DEVLINK_CMD_PORT_GET = 5
DEVLINK_CMD_INFO_GET = 51
DEVLINK_CMD_HEALTH_REPORTER_GET = 52

# enum devlink_attr
DEVLINK_ATTR_BUS_NAME = 1
DEVLINK_ATTR_DEV_NAME = 2
DEVLINK_ATTR_PORT_INDEX = 3
DEVLINK_ATTR_PORT_NETDEV_IFINDEX = 6
DEVLINK_ATTR_PORT_NETDEV_NAME = 7
DEVLINK_ATTR_PORT_SPLIT_GROUP = 10
DEVLINK_ATTR_PAD = 61
DEVLINK_ATTR_PORT_FLAVOUR = 77
DEVLINK_ATTR_PORT_NUMBER = 78
DEVLINK_ATTR_INFO_DRIVER_NAME = 98
DEVLINK_ATTR_INFO_SERIAL_NUMBER = 99
DEVLINK_ATTR_INFO_VERSION_FIXED = 100
DEVLINK_ATTR_INFO_VERSION_RUNNING = 101
DEVLINK_ATTR_INFO_VERSION_STORED = 102
DEVLINK_ATTR_INFO_VERSION_NAME = 103
DEVLINK_ATTR_INFO_VERSION_VALUE = 104
DEVLINK_ATTR_PORT_SPLIT_SUBPORT_NUMBER = 79
DEVLINK_ATTR_HEALTH_REPORTER = 114
DEVLINK_ATTR_HEALTH_REPORTER_NAME = 115
DEVLINK_ATTR_HEALTH_REPORTER_STATE = 116
DEVLINK_ATTR_HEALTH_REPORTER_ERR_COUNT = 117
DEVLINK_ATTR_HEALTH_REPORTER_RECOVER_COUNT = 118
DEVLINK_ATTR_HEALTH_REPORTER_DUMP_TS = 119
DEVLINK_ATTR_HEALTH_REPORTER_GRACEFUL_PERIOD = 120
DEVLINK_ATTR_HEALTH_REPORTER_AUTO_RECOVER = 121
DEVLINK_ATTR_PORT_PCI_PF_NUMBER = 127
DEVLINK_ATTR_PORT_PCI_VF_NUMBER = 128
DEVLINK_ATTR_HEALTH_REPORTER_DUMP_TS_NS = 137
DEVLINK_ATTR_HEALTH_REPORTER_AUTO_DUMP = 141

# version nest -> DevlinkVersion.slot
VERSION_SLOTS: Mapping[int, str] = MappingProxyType({
    DEVLINK_ATTR_INFO_VERSION_FIXED: "fixed", DEVLINK_ATTR_INFO_VERSION_RUNNING: "running",
    DEVLINK_ATTR_INFO_VERSION_STORED: "stored"})
INFO_SECONDS = 60.0  # versions change only when firmware is flashed or activated

# enum devlink_health_reporter_state
HEALTH_STATES: Mapping[int, str] = MappingProxyType({0: "healthy", 1: "error"})
# enum devlink_port_flavour
PORT_FLAVOURS: Mapping[int, str] = MappingProxyType({
    0: "physical", 1: "cpu", 2: "dsa", 3: "pci_pf", 4: "pci_vf", 5: "virtual", 6: "unused",
    7: "pci_sf"})


class DevlinkUnavailable(FamilyUnavailable):
    """The kernel has no devlink generic-netlink family (CONFIG_NET_DEVLINK=n)."""


@dataclasses.dataclass(frozen=True, slots=True)
class DevlinkResult:
    """One :meth:`DevlinkNetlink.read_all`: every reporter and port of the namespace, and the
    dumps that failed as a whole (``"HEALTH_REPORTER_GET"``/``"PORT_GET"`` -> errno name or
    ``parse``); ``infos``: each instance's ``devlink dev info`` (``"INFO_GET"`` in errors when
    that dump failed)."""

    reporters: tuple[DevlinkHealthReporter, ...]
    ports: tuple[DevlinkPort, ...]
    errors: Mapping[str, str] = dataclasses.field(
        default_factory=lambda: MappingProxyType({}))
    infos: tuple[DevlinkInfo, ...] = ()


# --- reply -> model ------------------------------------------------------------------------


def _handle(attrs: bytes, index: Mapping[int, Span]) -> str:
    bus, dev = index.get(DEVLINK_ATTR_BUS_NAME), index.get(DEVLINK_ATTR_DEV_NAME)
    if bus is None or dev is None:
        raise ParseError("devlink message without BUS_NAME and DEV_NAME")
    return f"{string_attr(attrs, bus)}/{string_attr(attrs, dev)}"


def _flag(attrs: bytes, index: Mapping[int, Span], attr: int) -> bool | None:
    value = uint_attr(attrs, index, attr)
    return None if value is None else bool(value)


def parse_reporter(attrs: bytes) -> DevlinkHealthReporter:
    """One HEALTH_REPORTER_GET reply (its attributes, after the genlmsghdr)."""
    top = attribute_index(attrs, 0, len(attrs))
    nest = top.get(DEVLINK_ATTR_HEALTH_REPORTER)
    if nest is None:
        raise ParseError("HEALTH_REPORTER_GET reply without DEVLINK_ATTR_HEALTH_REPORTER")
    rep = attribute_index(attrs, *nest)
    name = rep.get(DEVLINK_ATTR_HEALTH_REPORTER_NAME)
    state = uint_attr(attrs, rep, DEVLINK_ATTR_HEALTH_REPORTER_STATE)
    errors = uint_attr(attrs, rep, DEVLINK_ATTR_HEALTH_REPORTER_ERR_COUNT)
    recoveries = uint_attr(attrs, rep, DEVLINK_ATTR_HEALTH_REPORTER_RECOVER_COUNT)
    if name is None or state is None or errors is None or recoveries is None:
        raise ParseError("health reporter without NAME, STATE, ERR_COUNT or RECOVER_COUNT")
    dump_ns = uint_attr(attrs, rep, DEVLINK_ATTR_HEALTH_REPORTER_DUMP_TS_NS)
    return DevlinkHealthReporter(
        handle=_handle(attrs, top),
        port=uint_attr(attrs, top, DEVLINK_ATTR_PORT_INDEX),
        name=string_attr(attrs, name),
        state=HEALTH_STATES.get(state, "unknown"),
        errors=errors,
        recoveries=recoveries,
        grace_period_ms=uint_attr(attrs, rep, DEVLINK_ATTR_HEALTH_REPORTER_GRACEFUL_PERIOD),
        auto_recover=_flag(attrs, rep, DEVLINK_ATTR_HEALTH_REPORTER_AUTO_RECOVER),
        auto_dump=_flag(attrs, rep, DEVLINK_ATTR_HEALTH_REPORTER_AUTO_DUMP),
        # DUMP_TS alone (5.1 - 5.5) counts from boot, not from the epoch: not a timestamp
        last_dump_time=None if dump_ns is None else dump_ns / 1e9,
    )


def parse_port(attrs: bytes) -> DevlinkPort:
    """One PORT_GET reply (its attributes, after the genlmsghdr)."""
    top = attribute_index(attrs, 0, len(attrs))
    index = uint_attr(attrs, top, DEVLINK_ATTR_PORT_INDEX)
    if index is None:
        raise ParseError("PORT_GET reply without PORT_INDEX")
    name = top.get(DEVLINK_ATTR_PORT_NETDEV_NAME)
    flavour = uint_attr(attrs, top, DEVLINK_ATTR_PORT_FLAVOUR)
    return DevlinkPort(
        handle=_handle(attrs, top),
        index=index,
        netdev_ifindex=uint_attr(attrs, top, DEVLINK_ATTR_PORT_NETDEV_IFINDEX),
        netdev_name=None if name is None else string_attr(attrs, name),
        flavour=None if flavour is None else PORT_FLAVOURS.get(flavour, str(flavour)),
        number=uint_attr(attrs, top, DEVLINK_ATTR_PORT_NUMBER),
        split_group=uint_attr(attrs, top, DEVLINK_ATTR_PORT_SPLIT_GROUP),
        split_subport=uint_attr(attrs, top, DEVLINK_ATTR_PORT_SPLIT_SUBPORT_NUMBER),
        pf=uint_attr(attrs, top, DEVLINK_ATTR_PORT_PCI_PF_NUMBER),
        vf=uint_attr(attrs, top, DEVLINK_ATTR_PORT_PCI_VF_NUMBER),
    )


def parse_info(attrs: bytes) -> DevlinkInfo:
    """One INFO_GET reply (its attributes, after the genlmsghdr). The version nests repeat,
    so the top level is walked in order, not indexed."""
    top = attribute_index(attrs, 0, len(attrs))
    versions = []
    for kind, start, end in attributes(attrs, 0, len(attrs)):
        slot = VERSION_SLOTS.get(kind)
        if slot is None:
            continue
        nest = attribute_index(attrs, start, end)
        name = nest.get(DEVLINK_ATTR_INFO_VERSION_NAME)
        value = nest.get(DEVLINK_ATTR_INFO_VERSION_VALUE)
        if name is None or value is None:
            raise ParseError("devlink info version without NAME or VALUE")
        versions.append(DevlinkVersion(slot, string_attr(attrs, name), string_attr(attrs, value)))
    driver = top.get(DEVLINK_ATTR_INFO_DRIVER_NAME)
    serial = top.get(DEVLINK_ATTR_INFO_SERIAL_NUMBER)
    return DevlinkInfo(handle=_handle(attrs, top),
                       driver=None if driver is None else string_attr(attrs, driver),
                       serial=None if serial is None else string_attr(attrs, serial),
                       versions=tuple(versions))


def decode_infos(replies: Iterable[bytes]) -> tuple[DevlinkInfo, ...]:
    """Every INFO_GET reply; ValueError (ParseError) when one does not parse."""
    return tuple(parse_info(r) for r in replies)


def decode_dumps(reporter_replies: Iterable[bytes] | None,
                 port_replies: Iterable[bytes] | None,
                 errors: Mapping[str, str] | None = None,
                 infos: tuple[DevlinkInfo, ...] = ()) -> DevlinkResult:
    """Both dumps' replies (None: that dump failed, its error in ``errors``). A dump whose
    replies do not parse contributes nothing and is reported as ``parse``. ``infos``: the
    INFO_GET dump, decoded already (it has its own cadence)."""
    errors = dict(errors or {})
    reporters: tuple[DevlinkHealthReporter, ...] = ()
    ports: tuple[DevlinkPort, ...] = ()
    if reporter_replies is not None:
        try:
            reporters = tuple(parse_reporter(r) for r in reporter_replies)
        except ValueError:  # ParseError, or a string that is not UTF-8
            errors["HEALTH_REPORTER_GET"] = "parse"
    if port_replies is not None:
        try:
            ports = tuple(parse_port(r) for r in port_replies)
        except ValueError:
            errors["PORT_GET"] = "parse"
    return DevlinkResult(reporters, ports, MappingProxyType(errors), infos)


# --- mapping -------------------------------------------------------------------------------


def instances(nc: NetClass, port: DevlinkPort | None) -> tuple[str, ...]:
    """The devlink instances (handles) ``nc`` belongs to: its devlink port's, on any bus
    (``pci/0000:08:00.0``, ``netdevsim/netdevsim12``, ``auxiliary/mlx5_core.sf.2``: the
    port names the handle, ``devlink_nl_port_fill``), and ``pci/<its PCI function>`` for an
    interface whose driver registers no port for its netdev (or a port dump that failed)."""
    handles = [] if port is None else [port.handle]
    if nc.pci_address and f"pci/{nc.pci_address}" not in handles:
        handles.append(f"pci/{nc.pci_address}")
    return tuple(handles)


def port_of(nc: NetClass, result: DevlinkResult) -> DevlinkPort | None:
    """The devlink port whose netdev ``nc`` is: by ifindex, or by name where the port
    reports no ifindex."""
    return next((p for p in result.ports
                 if (p.netdev_ifindex is not None and p.netdev_ifindex == nc.ifindex)
                 or (p.netdev_ifindex is None and p.netdev_name == nc.name)), None)


def for_interface(nc: NetClass, result: DevlinkResult
                  ) -> tuple[DevlinkPort | None, tuple[DevlinkHealthReporter, ...]]:
    """The devlink port whose netdev ``nc`` is, and the reporters that concern ``nc``: the
    device reporters of its instances (:func:`instances`), then its port's reporters, in
    the dump's order."""
    port = port_of(nc, result)
    handles = instances(nc, port)
    reporters = tuple(
        r for r in result.reporters
        if (r.port is None and r.handle in handles)
        or (port is not None and r.port == port.index and r.handle == port.handle))
    return port, reporters


def info_of(nc: NetClass, result: DevlinkResult) -> DevlinkInfo | None:
    """The ``devlink dev info`` of ``nc``'s devlink instance (the first of :func:`instances`
    that reported one). mlx5 answers only on a PF (``mlx5_core_is_pf``): a VF's own instance
    reports nothing."""
    handles = instances(nc, port_of(nc, result))
    return next((i for h in handles for i in result.infos if i.handle == h), None)


def vf_ports(nc: NetClass, result: DevlinkResult) -> int | None:
    """The ``pci_vf``-flavour ports of ``nc``'s devlink instance (its port's handle, else
    ``pci/<its PCI function>``): the representors of its VFs, which exist only in
    switchdev e-switch mode (mlx5 registers them in esw_offloads_load_rep, only when
    esw->mode is MLX5_ESWITCH_OFFLOADS). None when the port dump failed or shows no port
    of that instance (no devlink instance: nothing known)."""
    if "PORT_GET" in result.errors:
        return None
    handles = instances(nc, port_of(nc, result))
    if not handles:
        return None
    ports = [p for p in result.ports if p.handle == handles[0]]
    return sum(p.flavour == "pci_vf" for p in ports) if ports else None


# --- the socket ----------------------------------------------------------------------------


class DevlinkNetlink(GenericNetlinkSocket):
    """A generic-netlink socket for the ``devlink`` family, reused across polls. Sees the
    devlink instances of the network namespace it was created in. Not thread-safe.

    Raises :class:`DevlinkUnavailable` if the kernel has no devlink family.

    The INFO_GET dump is sent every ``info_seconds`` (by ``clock``); the polls in between
    reuse its result, failures included."""

    family_name = DEVLINK_GENL_NAME
    unavailable = DevlinkUnavailable
    info_seconds: float = INFO_SECONDS
    clock: Callable[[], float] = staticmethod(time.monotonic)
    _info_at: float | None = None
    _infos: tuple[DevlinkInfo, ...] = ()
    _info_error: str | None = None

    def read_all(self) -> DevlinkResult:
        """Both dumps. A dump the kernel refuses (EOPNOTSUPP from a kernel before health
        reporters, 5.1) is reported in ``errors``; socket errors raise OSError."""
        replies: dict[str, list[bytes] | None] = {}
        errors: dict[str, str] = {}
        for name, cmd in (("HEALTH_REPORTER_GET", DEVLINK_CMD_HEALTH_REPORTER_GET),
                          ("PORT_GET", DEVLINK_CMD_PORT_GET)):
            try:
                replies[name] = self.genl_request(cmd, NLM_F_DUMP, b"")
            except KernelError as e:
                replies[name] = None
                errors[name] = errno_name(e.errno)
            except ParseError:
                replies[name] = None
                errors[name] = "parse"
        infos, info_error = self._read_infos()
        if info_error is not None:
            errors["INFO_GET"] = info_error
        return decode_dumps(replies["HEALTH_REPORTER_GET"], replies["PORT_GET"], errors, infos)

    def _read_infos(self) -> tuple[tuple[DevlinkInfo, ...], str | None]:
        now = self.clock()
        if self._info_at is not None and now - self._info_at < self.info_seconds:
            return self._infos, self._info_error
        self._info_at = now
        self._infos, self._info_error = (), None
        try:
            self._infos = decode_infos(self.genl_request(DEVLINK_CMD_INFO_GET, NLM_F_DUMP, b""))
        except KernelError as e:
            self._info_error = errno_name(e.errno)
        except ValueError:  # ParseError, or a string that is not UTF-8
            self._info_error = "parse"
        return self._infos, self._info_error


@runtime_checkable
class DevlinkReader(Protocol):
    """What DevlinkSource reads through: DevlinkNetlink, or a test double."""

    def read_all(self) -> DevlinkResult: ...
    def close(self) -> None: ...


class DevlinkSource:
    """Health reporters and devlink ports as a :class:`~nicwatch.sources.Source`: the
    ``devlink_health`` and ``devlink_port`` parts of each Reading, from two dumps per poll
    whatever the number of interfaces."""

    name = "devlink"
    fills: ClassVar[frozenset[str]] = frozenset(
        {"devlink_port", "devlink_health", "devlink_vf_ports", "devlink_info"})
    needs: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, reader: DevlinkReader) -> None:
        self.reader = reader

    @classmethod
    def open(cls, options: SourceOptions) -> DevlinkSource | None:
        """None when this kernel has no devlink family: logged once, here, at debug level (a
        kernel built without any driver that needs devlink is normal, and `nicwatch show`
        must stay quiet); the daemon's "serving" line lists the sources it reads."""
        try:
            return cls(DevlinkNetlink())
        except (DevlinkUnavailable, OSError) as e:
            log.debug("devlink_unavailable", error=str(e))
            return None

    def read(self, poll: Poll) -> None:
        try:
            result = self.reader.read_all()
        except OSError as e:
            poll.error("", self.name, errno_name(e.errno), str(e))
            return
        for message, kind in sorted(result.errors.items()):
            if kind != errno_name(errno.EOPNOTSUPP):  # a kernel without the command
                poll.error("", self.name, kind, f"{message} failed")
        for nc in poll.interfaces:
            port, reporters = for_interface(nc, result)
            if port is not None:
                poll.put(nc.name, Reading.devlink_port, port)
            if reporters:
                poll.put(nc.name, Reading.devlink_health, reporters)
            if (count := vf_ports(nc, result)) is not None:
                poll.put(nc.name, Reading.devlink_vf_ports, count)
            if (info := info_of(nc, result)) is not None:
                poll.put(nc.name, Reading.devlink_info, info)

    def close(self) -> None:
        self.reader.close()
