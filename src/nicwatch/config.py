"""Settings from defaults, a TOML file and command-line flags (flags win), as one frozen
Config. Every setting is declared once in SETTINGS with its TOML key, flag and parser, so
the file format, the flags and their errors cannot drift apart."""

from __future__ import annotations

import re
import sys
import textwrap
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from nicwatch.metrics import DEFAULT_DETAIL, DETAIL_LEVELS
from nicwatch.normalize.engine import RawOptions
from nicwatch.values import (
    DEFAULT_PORT,
    ConfigError,
    _choice,
    bounded,
    did_you_mean,
    parse_bool,
    parse_duration,
    parse_listen_address,
    parse_names,
    parse_regex,
    parse_size,
    parse_str,
    show_bytes,
    show_seconds,
    split_listen_address,
)

MAX_FILE_BYTES = 1 << 20  # a configuration file larger than this is refused, not read

# Bounds of every number a setting holds (docs/failure-behaviour.md, "Bounds"). The lower
# interval bound: a NIC poll costs milliseconds per port of whole-process CPU, and faster
# than 100 ms only burns it (the kernel's counters update about once a second on many
# drivers); the upper bounds keep a typo from overflowing a timer or meaning "never".
INTERVAL = bounded(parse_duration, 0.1, 3600)
HISTORY_WINDOW = bounded(parse_duration, 1, 7 * 86400)
HISTORY_BYTES = bounded(parse_size, 64 << 10, 16 << 30, show_bytes)
PEAK_WINDOW = bounded(parse_duration, 0.1, 86400)
# A module read is milliseconds of I2C per page on the NIC's management bus; faster than 10 s
# gains nothing (modules update their monitors about every 100 ms, alerting looks at minutes).
MODULE_INTERVAL = bounded(parse_duration, 10, 86400)


def parse_telemetry_path(value: Any) -> str:
    """``--web.telemetry-path``: an absolute URL path that is not another endpoint's."""
    if not isinstance(value, str) or not re.fullmatch(r"/[!$&'()*+,;=:@%~./0-9A-Za-z_-]{0,255}",
                                                      value):
        raise ValueError(f"expected a URL path such as \"/metrics\" (\"/\" then at most 255 "
                         f"letters, digits and -._~!$&'()*+,;=:@%/), got {str(value)[:60]!r}")
    if value in ("/", "/healthz", "/readyz") or value == "/api" or value.startswith("/api/"):
        raise ValueError(f"{value} is another endpoint's path (/, /healthz, /readyz, /api/)")
    return value


@dataclass(frozen=True, slots=True)
class CollectorSwitch:
    """A switch of node_exporter's kind (``--[no-]collector.NAME``): it turns off the sources
    it names (by their ``source`` label: sources.registry) and the consumers it names (by their
    names in consumers.registry) as a unit. Every registered source and consumer has exactly
    one switch (a test keeps this list and the registries equal)."""

    name: str  # the flag's NAME; the TOML key is collector.NAME with dashes as underscores
    default: bool
    sources: frozenset[str]
    consumers: frozenset[str]
    help: str


def _switch(name: str, default: bool, sources: tuple[str, ...], consumers: tuple[str, ...],
            help: str) -> CollectorSwitch:
    return CollectorSwitch(name, default, frozenset(sources), frozenset(consumers), help)


# The sources' and consumers' switches, in registry order. The first four predate the others
# and keep their help; what a disabled one leaves out: docs/reference/configuration.md.
COLLECTORS: tuple[CollectorSwitch, ...] = (
    _switch("ethtool-netlink", True, ("ethtool_netlink",), (), ""),
    _switch("ethtool-ioctl", True, ("ethtool_ioctl",), (),
            "Read driver statistics (GSTATS), driver info and permanent address through the "
            "ethtool ioctl (default true)."),
    _switch("dcb", True, ("dcbnl",), (),
            "Read the IEEE PFC, ETS and application tables over rtnetlink DCB (default true)."),
    _switch("devlink", True, ("devlink",), (),
            "Read devlink health reporters, ports and device info (default true)."),
    _switch("module", False, ("module",), (), ""),
    _switch("vfs", False, ("sriov",), (), ""),
    _switch("receive-path", True, ("netdev_genl", "rxpath"), ("receive_path",), ""),
    _switch("pci", True, ("sysfs_pci",), (),
            "Read each NIC's PCIe path (link speed and width, AER counts, power state) from "
            "sysfs (default true)."),
    _switch("rdma", True, ("rdma",), (),
            "Read RDMA ports and their counters (default true; docs/rdma.md)."),
    _switch("roce-ecn", True, ("sysfs_roce_ecn",), (),
            "Read mlx5's RoCE ECN switches from sysfs (default true)."),
    _switch("bonding", True, ("sysfs_bonding",), (),
            "Read bonding membership of each NIC from sysfs (default true)."),
    _switch("hwmon", True, ("sysfs_hwmon",), (),
            "Read the NIC's hardware monitor sensors (ASIC temperature) from sysfs "
            "(default true)."),
    _switch("softirq", True, ("host",), ("softirq",),
            "Read per-CPU softirq time from procfs and export each NIC's softirq load "
            "(default true)."),
    _switch("history", True, (), ("history",),
            "Keep the in-memory flight recorder of recent polls (/api/v1/history; incidents "
            "cut their windows from it) (default true)."),
    _switch("identity", True, (), ("identity",),
            "Remember each NIC's PCI address and name in the state file and report identity "
            "changes (default true)."),
    _switch("link-physics", True, (), ("link_physics",),
            "Export link physics derived from FEC counters (pre-FEC BER, margin) (default "
            "true)."),
    _switch("checks", True, (), ("checks",),
            "Evaluate the configured expectations ([[expect]], [[consistent]]) (default true)."),
    _switch("incidents", True, (), ("incidents",),
            "Capture incidents when a configured trigger fires ([capture]) (default true)."),
    _switch("diagnosis", True, (), ("diagnosis",),
            "Evaluate the diagnosis signatures and export nic_diagnosis (default true)."),
    _switch("lldp", False, ("lldp",), (), ""),
    _switch("fabric-role", True, (), ("fabric_role",),
            "Export each port's [fabric] role as nic_fabric_role_info where one is set "
            "(default true)."),
)
# Switches older than --collector.disable-defaults: declared with their own help below.
_OLDER_SWITCHES = frozenset({"ethtool-netlink", "module", "vfs", "receive-path", "lldp"})
COLLECTOR_KEYS = {f"collector.{c.name.replace('-', '_')}": c for c in COLLECTORS}
# What the one-shot commands that poll (show, snapshot, record, check) take: the sources'
# switches and --collector.disable-defaults.
SOURCE_SWITCH_KEYS = (*(key for key, c in COLLECTOR_KEYS.items() if c.sources),
                      "collector.disable_defaults")


@dataclass(frozen=True, slots=True)
class Setting:
    key: str  # dotted TOML key, also the Config attribute with dots -> underscores
    flag: str
    parse: Callable[[Any], Any]
    default: Any
    help: str
    metavar: str = ""


SETTINGS: tuple[Setting, ...] = (
    Setting("interval", "--interval", INTERVAL, 5.0,
            "Poll interval, 100ms to 1h (default 5s).", "DURATION"),
    Setting("web.listen_address", "--web.listen-address", parse_listen_address,
            f":{DEFAULT_PORT}", f"Address to serve /metrics on (default :{DEFAULT_PORT}, all "
            "addresses; use 127.0.0.1:PORT or a management address to keep it off fabric "
            "ports).", "HOST:PORT"),
    Setting("web.config_file", "--web.config.file", parse_str, None,
            "exporter-toolkit web configuration file (TLS, client certificates, bcrypt basic "
            "auth, headers, rate limit); re-read when it or its certificates change.", "FILE"),
    Setting("web.telemetry_path", "--web.telemetry-path", parse_telemetry_path, "/metrics",
            "Path under which to expose metrics, as node_exporter's flag (default /metrics).",
            "PATH"),
    Setting("web.systemd_socket", "--web.systemd-socket", parse_bool, False,
            "Serve on the socket systemd passes (socket activation) instead of "
            "--web.listen-address.", "BOOL"),
    Setting("web.enable_writes", "--web.enable-writes", parse_bool, False,
            "Serve the write endpoints (POST /api/v1/snapshots); behind the same "
            "authentication as everything else (default false).", "BOOL"),
    Setting("path.sysfs", "--path.sysfs", parse_str, "/sys",
            "sysfs mount point (default /sys).", "PATH"),
    Setting("path.procfs", "--path.procfs", parse_str, "/proc",
            "procfs mount point, for boot id, boot time, kernel release and the receive path "
            "(interrupt affinity, softnet_stat) (default /proc).",
            "PATH"),
    Setting("history.window", "--history.window", HISTORY_WINDOW, 3600.0,
            "How far back the in-memory history of polls reaches (default 1h), served at "
            "/api/v1/history and saved by `nicwatch history`.", "DURATION"),
    Setting("history.max_bytes", "--history.max-bytes", HISTORY_BYTES, 64 << 20,
            "Memory cap of that history (default 64MiB); the oldest polls go first.",
            "SIZE"),
    Setting("history.raw_stats", "--history.raw-stats", parse_bool, False,
            "Also keep raw driver statistics in that history (default false: canonical "
            "counters, gauges and state only; raw statistics cost ~17 MB an hour for 32 "
            "ports of 577 statistics).", "BOOL"),
    Setting("interfaces.include", "--interfaces.include", parse_regex, None,
            "Poll interfaces whose name matches this regex, of any type (default: every "
            "interface backed by a device).", "REGEX"),
    Setting("interfaces.exclude", "--interfaces.exclude", parse_regex, None,
            "Never poll interfaces whose name matches this regex.", "REGEX"),
    Setting("collector.raw", "--collector.raw", parse_bool, False,
            "Also export raw driver statistics as nic_driver_stat_total{stat} and "
            "nic_driver_stat_value{stat} (true/false; default false).", "BOOL"),
    Setting("collector.raw_include", "--collector.raw.include", parse_regex, ".*",
            "Raw statistics to export (regex on the queue-less name).", "REGEX"),
    Setting("collector.raw_exclude", "--collector.raw.exclude", parse_regex, "",
            "Raw statistics never to export (regex).", "REGEX"),
    Setting("collector.per_queue", "--collector.per-queue", parse_names, (),
            "Queue-less raw statistic names to export per queue as nic_queue_stat_total "
            "(comma-separated, e.g. rx_buff_alloc_err).", "NAMES"),
    Setting("collector.ethtool_netlink", "--collector.ethtool-netlink", parse_bool, True,
            "Read standard statistics, rings and channels over ethtool netlink (default true).",
            "BOOL"),
    Setting("collector.module", "--collector.module", parse_bool, False,
            "Read pluggable module diagnostics (ethtool -m: identity, temperature, optical "
            "power, thresholds, flags) on a thread of their own (default false; needs "
            "CAP_NET_ADMIN, see docs/optics.md).", "BOOL"),
    Setting("collector.module_interval", "--collector.module.interval", MODULE_INTERVAL, 60.0,
            "How often each module EEPROM is read, 10s to 24h (default 60s); the counter poll "
            "never waits for it.", "DURATION"),
    Setting("collector.lldp", "--collector.lldp", parse_bool, False,
            "Receive LLDP passively on each selected port (never sent) and export each "
            "port's neighbour and its IEEE 802.1Qaz DCBX (PFC, ETS, application priority) "
            "on a thread of their own (default false; needs CAP_NET_RAW, see "
            "docs/fabric.md).", "BOOL"),
    Setting("fabric.chassis_id", "--fabric.chassis-id", parse_str, None,
            "This host's LLDP chassis id as its LLDP agent announces it, exported in "
            "nic_lldp_local_info so that rules join both ends of a link (default: lldpd's "
            "default, the MAC address of the lowest-ifindex port with a device).", "ID"),
    Setting("fabric.port_id", "--fabric.port-id", _choice("mac", "ifname"), "mac",
            "What this host's LLDP agent announces as each port's id: mac (lldpd's default) "
            "or ifname (lldpd with portidsubtype ifname, systemd-networkd).", "KIND"),
    Setting("fabric.role", "--fabric.role", parse_str, None,
            "This host's role in the fabric (e.g. gpu-backend, storage), exported as "
            "nic_fabric_role_info on every port so that the fleet drift rules compare ports "
            "of the same role across hosts (default: none, not compared).", "ROLE"),
    Setting("collector.rates", "--collector.rates", parse_bool, False,
            "Also export nicwatch's own poll-to-poll rates as *_per_second gauges (default "
            "false: use rate() on the counters; the *_peak_per_second gauges are served at every "
            "--collector.detail level for the byte and flow control families, at full for all).",
            "BOOL"),
    Setting("collector.detail", "--collector.detail", _choice(*DETAIL_LEVELS), DEFAULT_DETAIL,
            "How much detail /metrics serves: port (default: per port, lane, priority and "
            "module, what the shipped dashboards and alerts use), queue (adds per-queue, "
            "per-interrupt and per-CPU series), full (every series: clear module flags, every "
            "threshold level, the FEC histogram, error counters' peak rates, every "
            "nic_stat_supported); docs/metrics.md, Detail tiers.", "LEVEL"),
    Setting("collector.vfs", "--collector.vfs", parse_bool, False,
            "Export the SR-IOV VFs of each PF: per-VF traffic and drop counters and their "
            "MAC/VLAN/spoof check/trust (default false: a PF can have hundreds of VFs, about "
            "ten series each; docs/sriov.md).", "BOOL"),
    Setting("collector.rdma_netlink", "--collector.rdma-netlink", parse_bool, True,
            "Read RDMA port counters over the RDMA netlink family where the kernel has it, "
            "sysfs otherwise (default true; docs/rdma.md).", "BOOL"),
    Setting("collector.rdma_include", "--collector.rdma.device-include", parse_regex, None,
            "Read only RDMA devices whose name matches this regex (default: all).", "REGEX"),
    Setting("collector.rdma_exclude", "--collector.rdma.device-exclude", parse_regex, None,
            "Never read RDMA devices whose name matches this regex: nothing of them is read "
            "(for devices whose firmware refuses counter queries).", "REGEX"),
    Setting("collector.receive_path", "--collector.receive-path", parse_bool, True,
            "Read each NIC's receive path: queues, NAPIs and queue statistics (netdev netlink), "
            "its interrupts, their affinity and the CPUs that took them, RPS masks and the "
            "softnet counters of the CPUs serving it (default true; docs/receive-path.md).",
            "BOOL"),
    *(Setting(f"collector.{c.name.replace('-', '_')}", f"--collector.{c.name}", parse_bool,
              c.default, c.help, "BOOL") for c in COLLECTORS if c.name not in _OLDER_SWITCHES),
    Setting("collector.disable_defaults", "--collector.disable-defaults", parse_bool, False,
            "Turn off every collector (the --collector.NAME switches of sources and consumers) "
            "not turned on by name, as node_exporter's flag: `--collector.disable-defaults "
            "--collector.ethtool-ioctl` reads only the ethtool statistics (default false). The "
            "switches apply at start: a reload (SIGHUP) keeps the running set.",
            "BOOL"),
    Setting("state.file", "--state.file", parse_str, None,
            "State file remembering each NIC's PCI address and name by permanent MAC, to report "
            "identity changes across restarts (default: identity.json in $STATE_DIRECTORY, "
            "else /var/lib/nicwatch if writable, else $XDG_STATE_HOME/nicwatch or "
            "~/.local/state/nicwatch; with none writable, one warning and no persistence).",
            "PATH"),
    Setting("rates.peak_window", "--rates.peak-window", PEAK_WINDOW, 60.0,
            "Window for the *_peak_per_second gauges (default 60s).", "DURATION"),
    Setting("log.level", "--log.level", _choice("debug", "info", "warning", "error"), "info",
            "Log level (default info).", "LEVEL"),
    Setting("log.format", "--log.format", _choice("auto", "json", "console"), "auto",
            "Log format; auto is JSON unless stderr is a terminal.", "FORMAT"),
)


def _toml_default(s: Setting) -> str | None:
    """A setting's default as the TOML value that parses back to it (None: no default)."""
    d = s.default
    if d is None:
        return None
    if isinstance(d, bool):
        return "true" if d else "false"
    if s.metavar == "DURATION":
        return f'"{show_seconds(d)}"'
    if s.metavar == "SIZE":
        return f'"{show_bytes(d)}"'
    if isinstance(d, tuple):
        return "[" + ", ".join(f'"{x}"' for x in d) + "]"
    return f'"{d}"' if isinstance(d, str) else repr(d)


def _comment(text: str, width: int = 92) -> list[str]:
    return ["# " + line for line in textwrap.wrap(text, width - 2)]


# The sections their owners parse (consumers.incidents: [capture]; consumers.checks:
# [[expect]] and [[consistent]]), shown after the settings; a test keeps every capture and
# trigger key named here.
_SECTIONS_EXAMPLE = """\

# Incident capture (docs/incidents.md): when a trigger fires, the daemon saves the snapshot
# at onset, the history around it and a report in one directory per incident.
#[capture]
#directory = "/var/lib/nicwatch/incidents"   # default: "incidents" beside the state file
#before = "2m"                               # history kept from before the onset
#after = "1m"                                # an incident closes this long after it last fired
#max_bytes = "256MiB"                        # oldest incidents removed first
#cooldown = "0s"                             # no new incident for the same trigger and port
#max_open = 32                               # incidents open at once, all triggers (1-1024)
#max_per_trigger = 8                         # incidents one trigger opens ...
#per_trigger_window = "1m"                   # ... within this long (1-1024; 1s to 24h)
#
#[[capture.trigger]]
#name = "pfc_p3"                             # optional
#family = "nic_rx_pfc_frames_total"          # any canonical counter family
#rate_above = 1000                           # per second (base unit: frames, packets, bytes)
#labels = { priority = "3" }                 # optional
#device = "ens.*"                            # optional regex on the interface name
#
#[[capture.trigger]]
#event = "pcie_degraded"                     # also link_down, identity_changed, stat_set_changed

# Expectations ([[expect]], [[consistent]]): see roce-fabric.toml (`nicwatch deploy config
# roce-fabric.toml`) and docs/expectations.md.
"""


def example_toml() -> str:
    """deploy/nicwatch.toml: every setting of SETTINGS, each with its help and its default
    commented out (so the file changes nothing until a line is uncommented), by table in
    the order SETTINGS declares them, then the sections their owners parse."""
    lines = ["# nicwatch configuration: every key, each at its default and commented out; flags",
             "# override the file. Reload with SIGHUP (systemctl reload nicwatch); a bad file",
             "# keeps the running configuration. Generated from nicwatch's settings",
             "# declaration by deploy/generate_config.py.", ""]
    tables: dict[str, list[Setting]] = {}
    for s in SETTINGS:
        tables.setdefault(s.key.rpartition(".")[0], []).append(s)
    for table, settings in tables.items():
        if table:
            lines.append(f"[{table}]")
        for s in settings:
            name = s.key.rpartition(".")[2]
            value = _toml_default(s)
            lines += _comment(f"{s.help} Flag: {s.flag}.")
            lines.append(f"#{name} = {value}" if value is not None
                         else f"#{name} =   # {s.metavar}, no default")
        lines.append("")
    return "\n".join(lines) + _SECTIONS_EXAMPLE


@dataclass(frozen=True, slots=True)
class Section:
    """A part of the configuration file its owner declares and parses (consumers.checks:
    ``[[expect]]`` and ``[[consistent]]``; consumers.incidents: ``[capture]``): its top-level
    TOML ``keys``, ``parse(document, path)`` (ConfigError naming the file and the key) and
    the ``default`` value without a file. Config imports no consumer: each owner registers
    its section when imported, and consumers.registry imports every owner."""

    name: str  # Config.section(name)
    keys: tuple[str, ...]
    parse: Callable[[Mapping[str, Any], str], Any]
    default: Callable[[], Any]


# Declarations, filled as their owners are imported and never at run time: not a cache.
SECTIONS: dict[str, Section] = {}


def register_section(section: Section) -> None:
    """Declare a section of the configuration file (see :class:`Section`); a name or a key
    another section holds is refused (a programming error, ValueError)."""
    held = SECTIONS.get(section.name)
    if held == section:
        return  # the same declaration again
    taken = {k for s in SECTIONS.values() for k in s.keys} & set(section.keys)
    taken |= {s.key.partition(".")[0] for s in SETTINGS} & set(section.keys)
    if held is not None or taken:
        raise ValueError(f"configuration section {section.name!r} ({', '.join(section.keys)}) "
                         "collides with a section or setting already declared")
    SECTIONS[section.name] = section


# Each setting's default is written once, in SETTINGS; Config's fields take it from there.
_DEFAULTS = {s.key.replace(".", "_"): s.default for s in SETTINGS}


def _default(attr: str) -> Any:
    return _DEFAULTS[attr]


@dataclass(frozen=True, slots=True)
class Config:
    """Every setting's value (a SETTINGS key with dots as underscores), and the sections
    their owners parse."""

    interval: float = _default("interval")
    web_listen_address: str = _default("web_listen_address")
    web_config_file: str | None = _default("web_config_file")
    web_telemetry_path: str = _default("web_telemetry_path")
    web_systemd_socket: bool = _default("web_systemd_socket")
    web_enable_writes: bool = _default("web_enable_writes")
    path_sysfs: str = _default("path_sysfs")
    path_procfs: str = _default("path_procfs")
    history_window: float = _default("history_window")
    history_max_bytes: int = _default("history_max_bytes")
    history_raw_stats: bool = _default("history_raw_stats")
    interfaces_include: str | None = _default("interfaces_include")
    interfaces_exclude: str | None = _default("interfaces_exclude")
    collector_raw: bool = _default("collector_raw")
    collector_raw_include: str = _default("collector_raw_include")
    collector_raw_exclude: str = _default("collector_raw_exclude")
    collector_per_queue: tuple[str, ...] = _default("collector_per_queue")
    collector_ethtool_netlink: bool = _default("collector_ethtool_netlink")
    collector_module: bool = _default("collector_module")
    collector_lldp: bool = _default("collector_lldp")
    fabric_chassis_id: str | None = _default("fabric_chassis_id")
    fabric_port_id: str = _default("fabric_port_id")
    fabric_role: str | None = _default("fabric_role")
    collector_module_interval: float = _default("collector_module_interval")
    collector_rates: bool = _default("collector_rates")
    collector_detail: str = _default("collector_detail")
    collector_vfs: bool = _default("collector_vfs")
    collector_rdma_netlink: bool = _default("collector_rdma_netlink")
    collector_rdma_include: str | None = _default("collector_rdma_include")
    collector_rdma_exclude: str | None = _default("collector_rdma_exclude")
    collector_receive_path: bool = _default("collector_receive_path")
    collector_ethtool_ioctl: bool = _default("collector_ethtool_ioctl")
    collector_dcb: bool = _default("collector_dcb")
    collector_devlink: bool = _default("collector_devlink")
    collector_pci: bool = _default("collector_pci")
    collector_rdma: bool = _default("collector_rdma")
    collector_roce_ecn: bool = _default("collector_roce_ecn")
    collector_bonding: bool = _default("collector_bonding")
    collector_hwmon: bool = _default("collector_hwmon")
    collector_softirq: bool = _default("collector_softirq")
    collector_history: bool = _default("collector_history")
    collector_identity: bool = _default("collector_identity")
    collector_link_physics: bool = _default("collector_link_physics")
    collector_checks: bool = _default("collector_checks")
    collector_incidents: bool = _default("collector_incidents")
    collector_diagnosis: bool = _default("collector_diagnosis")
    collector_fabric_role: bool = _default("collector_fabric_role")
    collector_disable_defaults: bool = _default("collector_disable_defaults")
    state_file: str | None = _default("state_file")  # None: the first usable (identity.py)
    rates_peak_window: float = _default("rates_peak_window")
    log_level: str = _default("log_level")
    log_format: str = _default("log_format")
    sections: Mapping[str, Any] = field(default_factory=dict, hash=False)  # by name
    source: str = field(default="defaults", compare=False)

    def section(self, name: str) -> Any:
        """The parsed value of the registered section ``name``; its default without one."""
        return self.sections[name] if name in self.sections else SECTIONS[name].default()

    @property
    def raw_options(self) -> RawOptions:
        return RawOptions(self.collector_raw, self.collector_raw_include,
                          self.collector_raw_exclude, self.collector_per_queue)

    @property
    def listen(self) -> tuple[str, int]:
        return split_listen_address(self.web_listen_address)

    def collector_enabled(self, switch: CollectorSwitch) -> bool:
        return bool(getattr(self, _attr(f"collector.{switch.name.replace('-', '_')}")))

    @property
    def disabled_sources(self) -> frozenset[str]:
        """The ``source`` labels of the sources a --no-collector.NAME turned off."""
        return frozenset(name for c in COLLECTORS if not self.collector_enabled(c)
                         for name in c.sources)

    @property
    def disabled_consumers(self) -> frozenset[str]:
        """The names (consumers.registry) of the consumers turned off."""
        return frozenset(name for c in COLLECTORS if not self.collector_enabled(c)
                         for name in c.consumers)


def _attr(key: str) -> str:
    return key.replace(".", "_")


def _flatten(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in table.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


_BY_KEY = {s.key: s for s in SETTINGS}


def read_file(path: str) -> dict[str, Any]:
    """Parsed and validated values of a TOML config file, by setting key."""
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_FILE_BYTES + 1)  # bounded: --config /dev/zero ends here
    except OSError as e:
        raise ConfigError(f"{path}: cannot read config: {e.strerror}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_FILE_BYTES >> 20} MiB, not a config file")
    try:
        text = raw.decode()
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: not UTF-8 (byte {raw[e.start]:#04x} at offset "
                          f"{e.start})") from None
    try:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            raise
        except ValueError:  # tomllib's int() of an integer longer than Python converts
            raise ConfigError(f"{path}: holds an integer of more than "
                              f"{sys.get_int_max_str_digits()} digits") from None
        values: dict[str, Any] = {"sections": {
            name: section.parse(data, path) for name, section in SECTIONS.items()}}
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML: {e}") from None
    except RecursionError:
        raise ConfigError(f"{path}: nested too deeply") from None
    owned = {key for section in SECTIONS.values() for key in section.keys}
    settings = {k: v for k, v in data.items() if k not in owned}
    for key, raw in _flatten(settings).items():
        setting = _BY_KEY.get(key)
        if setting is None:
            meant = did_you_mean(key, tuple(_BY_KEY))
            if meant is not None:
                where = f" (under [{meant.split('.')[0]}])" if "." in meant else ""
                raise ConfigError(f"{path}: unknown key {key!r}: did you mean {meant!r}{where}?")
            raise ConfigError(f"{path}: unknown key {key!r} (known: {', '.join(_BY_KEY)})")
        try:
            values[key] = setting.parse(raw)
        except ValueError as e:
            raise ConfigError(f"{path}: key {key!r}: {e}") from None
    return values


def build(file: str | None, flags: Mapping[str, Any]) -> Config:
    """Defaults, then ``file``, then flags given on the command line (key -> raw string)."""
    values = read_file(file) if file else {}
    for key, raw in flags.items():
        try:
            values[key] = _BY_KEY[key].parse(raw)
        except ValueError as e:
            raise ConfigError(f"flag {_BY_KEY[key].flag}: {e}") from None
    if values.get("collector.disable_defaults"):  # node_exporter's: off unless named
        for key in COLLECTOR_KEYS:
            values.setdefault(key, False)
    return Config(**{_attr(k): v for k, v in values.items()}, source=file or "flags")
