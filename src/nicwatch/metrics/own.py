"""Families the tracker, the consumers and the daemon itself export (nicwatch_*), next to
the canonical ones: one contract for everything on /metrics."""

from __future__ import annotations

from nicwatch.metrics.family import Family, _counter, _gauge

# --------------------------------------------------------------------------- the daemon's own
# Families the tracker, the consumers and the daemon itself export, next to the canonical ones
# above: one contract for everything on /metrics (docs/metrics.md is generated from all of it).
# The *_per_second and *_peak_per_second gauges of RATED_COUNTERS are derived per family (see
# exporter.render).

STAT_RESETS = _counter(
    "nic_stat_resets_total", "Counter resets nicwatch detected per interface: a counter went "
    "backwards (counter_decrease), the driver's statistic set changed (stat_set_changed), or "
    "the interface was replaced under the same name (interface_replaced), or an SR-IOV VF's "
    "counters went backwards (vf_counter_decrease: the VF was re-created; not taken as a "
    "reset of the PF's own counters).", labels=("reason",))
STAT_WRAP_SAFE_INTERVAL = _gauge(
    "nic_stat_wrap_safe_interval_seconds", "Longest time between two polls in which no 32-bit "
    "hardware counter of this interface can move by 2^32 at its line rate (packet-like counters "
    "at 64-byte frames: 7.2 s at 400 Gb/s, 3.6 s at 800 Gb/s). Poll at least this often or a "
    "counter may wrap more than once unseen. Absent without 32-bit counters or a known link "
    "speed.", unit="seconds")
STAT_WRAP_AMBIGUOUS = _gauge(
    "nic_stat_wrap_ambiguous", "1 when the time since the last poll exceeded "
    "nic_stat_wrap_safe_interval_seconds: a 32-bit counter of this interface may have wrapped "
    "more than once unseen, so its value can be short by multiples of 2^32; 0 otherwise.")
TRACKER_FAMILIES: tuple[Family, ...] = (STAT_RESETS, STAT_WRAP_SAFE_INTERVAL, STAT_WRAP_AMBIGUOUS)

# consumers
EXPECTATION_VIOLATION = Family(
    "nic_expectation_violation", "gauge",
    "An expectation from the configuration that this interface does not meet (nicwatch "
    "check): check names the property, expected and actual its values (actual=\"absent\" "
    "when the driver does not report it); value 1, present only while violated.",
    ("check", "expected", "actual"))
EXPECTATION_CHECKS = Family(
    "nicwatch_expectation_checks", "gauge",
    "Expectation checks evaluated in the last poll, by result (pass, fail); present whenever "
    "expectations are configured, so 0 and 0 means they selected no interface.",
    ("result",))
IDENTITY_CHANGES = _counter(
    "nic_identity_changes_total", "Times this NIC (by permanent MAC) was seen at a different "
    "PCI address or interface name than the state file recorded, across daemon restarts and "
    "reboots.", labels=("kind",))
SOFTIRQ_RATIO = _gauge(
    "nic_local_cpu_softirq_ratio", "Share of time the CPUs local to this NIC (its PCI "
    "function's local_cpulist) spent in softirq between the last two polls: stat=max is the "
    "busiest such CPU, stat=mean their average. A max near 1 means the core serving receive "
    "work is saturated.", labels=("stat",), unit="ratio")
RX_CPU_SQUEEZED_SOFTIRQ = _gauge(
    "nic_rx_cpu_squeezed_softirq_ratio", "The highest share of time in softirq, between the "
    "last two polls, of the CPUs serving this NIC whose time_squeeze count rose over the same "
    "polls (nic_rx_cpu_softirq_ratio joined with nic_rx_cpu_time_squeeze_total on cpu, per "
    "poll); 0 when none of them ran out of budget. A value near 1: a serving core is saturated "
    "with receive work and cannot keep up (NicReceiveCpuSaturated).", unit="ratio")
RX_CPUS_SQUEEZED = _gauge(
    "nic_rx_cpus_squeezed", "CPUs serving this NIC whose time_squeeze count rose between the "
    "last two polls (net_rx_action stopped with packets left).")
RX_CPUS_DROPPING = _gauge(
    "nic_rx_cpus_dropping", "CPUs serving this NIC whose backlog dropped packets between the "
    "last two polls (nic_rx_cpu_dropped_total rose: the per-CPU backlog was full).")
IRQ_CPU_SOFTIRQ_RATIO = _gauge(
    "nic_irq_cpu_softirq_ratio", "Share of time the CPUs serving this NIC (its interrupts' "
    "effective affinity and its RPS CPUs) spent in softirq between the last two polls: "
    "stat=max the busiest of them, stat=mean their average.", labels=("stat",), unit="ratio")
RX_CPU_SOFTIRQ_RATIO = _gauge(
    "nic_rx_cpu_softirq_ratio", "Share of time CPU `cpu`, which serves this NIC, spent in "
    "softirq between the last two polls (/proc/stat); join with "
    "nic_rx_cpu_time_squeeze_total on cpu.", labels=("cpu",), unit="ratio")
RX_QUEUE_BUSIEST_SHARE = _gauge(
    "nic_rx_queue_busiest_share", "Share of the NIC's received packets (summed over its "
    "receive queues) that its busiest receive queue took: window=poll between the last two "
    "polls, window=peak the highest poll value within the peak window. Absent below 1000 "
    "packets in a poll (too few to judge a spread).", labels=("window",), unit="ratio")
RX_QUEUE_IMBALANCE = _gauge(
    "nic_rx_queue_imbalance_ratio", "The busiest receive queue's share divided by the fair "
    "share (1 / the receive queues in use: rx or combined channels): 1 is a perfect spread, "
    "N means one queue took all. window as for nic_rx_queue_busiest_share.",
    labels=("window",), unit="ratio")
RX_QUEUE_BUSIEST = _gauge(
    "nic_rx_queue_busiest_info", "The busiest receive queue in the last poll and the CPUs "
    "that served it (its interrupts' effective affinity, else its RPS CPUs; \"\" unknown); "
    "value: its share of the NIC's packets.", labels=("queue", "cpus"), unit="ratio")
RX_CPU_BUSY_QUEUES = _gauge(
    "nic_rx_cpu_busy_queues_max", "The most busy receive queues (each at least half its fair "
    "share of the last poll's packets) whose interrupts one CPU served in the last poll; "
    "above 1, queues the NIC spreads over are stacked on one core.")
IRQ_CPUS = _gauge(
    "nic_irq_interrupt_cpus", "CPUs that took the NIC's queue interrupts between the last two "
    "polls (/sys/kernel/irq/<n>/per_cpu_count or /proc/interrupts).")
IRQS_MOVED = _gauge(
    "nic_irqs_moved", "The NIC's queue interrupts taken between the last two polls on a CPU "
    "outside the effective affinity read before (moved by irqbalance or by hand).")
RXPATH_FAMILIES: tuple[Family, ...] = (
    IRQ_CPU_SOFTIRQ_RATIO, RX_CPU_SOFTIRQ_RATIO, RX_CPU_SQUEEZED_SOFTIRQ, RX_CPUS_SQUEEZED,
    RX_CPUS_DROPPING, RX_QUEUE_BUSIEST_SHARE, RX_QUEUE_IMBALANCE,
    RX_QUEUE_BUSIEST, RX_CPU_BUSY_QUEUES, IRQ_CPUS, IRQS_MOVED)
# incident capture (consumers/incidents/, docs/incidents.md)
INCIDENTS_TOTAL = _counter(
    "nic_incidents_total",
    "Incidents opened by each capture trigger of the [capture] config section since the "
    "daemon started (see `nicwatch incidents`); firings over a cap are merged into an open "
    "incident instead (nicwatch_incidents_merged_total).", labels=("trigger",))
INCIDENTS_MERGED = _counter(
    "nicwatch_incidents_merged_total",
    "Interfaces on which a capture trigger fired while a cap ([capture] max_open, "
    "max_per_trigger per per_trigger_window) kept it from opening an incident of its own: "
    "each was merged into an open incident of the trigger (listed in its incident.json), "
    "by trigger.", labels=("trigger",))
INCIDENT_OPEN = _gauge(
    "nicwatch_incident_open",
    "Incidents open on this interface: a capture trigger fired within its `after` window and "
    "the evidence is still being recorded.", labels=("device",))
INCIDENT_WRITE_FAILURES = _counter(
    "nicwatch_incident_write_failures_total",
    "Incident directory writes that failed, by reason (an errno name such as ENOSPC, or "
    "queue_full when more incidents waited for the writer than it holds); nothing partial "
    "is left, and a failed write is retried.", labels=("reason",))
INCIDENT_WRITES_PENDING = _gauge(
    "nicwatch_incident_writes_pending",
    "Incident directories waiting for the writer thread (each written when an incident opens "
    "and when it closes; a write that failed waits for its retry).")
INCIDENT_FAMILIES: tuple[Family, ...] = (INCIDENTS_TOTAL, INCIDENTS_MERGED, INCIDENT_OPEN,
                                         INCIDENT_WRITE_FAILURES, INCIDENT_WRITES_PENDING)
# link physics (consumers/linkphysics.py, normalize/linkphysics.py, docs/link-physics.md)
PRE_FEC_BER = _gauge(
    "nic_pre_fec_ber", "Pre-FEC bit error ratio between the last two polls: bit errors FEC "
    "corrected (nic_fec_lane_bit_errors_total per lane; nic_fec_corrected_bit_errors_total for "
    "lane \"total\") per bit the lane carried at its serdes rate for the link mode "
    "(nic_link_lane_serdes_bytes_per_second x 8: 53.125 Gb/s for a 50G PAM4 lane, 106.25 for "
    "100G, 25.78125 for 25G NRZ; lane \"total\" over every lane). fec names the code in use: "
    "rs544 (RS(544,514) KP4), rs528 (RS(528,514) KR4), baser (BASE-R FC-FEC), llrs, none. "
    "FEC decodes idle codewords too: the denominator is the line, not traffic.",
    labels=("lane", "fec"), unit="ratio")
LANE_BIT_RATE = _gauge(
    "nic_link_lane_serdes_bytes_per_second", "Serdes rate of one lane of the link mode (speed "
    "and lanes; IEEE 802.3 clause named in docs/link-physics.md) in bytes per second: x 8 is "
    "the lane's bit rate that nic_pre_fec_ber divides by (53.125 Gb/s for a 50G PAM4 lane); "
    "absent for a mode nicwatch has no rate for.", unit="bytes_per_second")
FEC_MARGIN = _gauge(
    "nic_fec_margin_symbols", "Symbols of FEC correction left in the worst codeword between "
    "the last two polls: the code's limit (15 for RS(544,514), 7 for RS(528,514)) minus the "
    "bin_high of the highest nic_fec_codewords_total bin that grew; the limit itself when no "
    "bin with errors grew, 0 or below when codewords reached the limit. Per lane where the "
    "histogram has lanes, else lane \"total\".", labels=("lane",), unit="symbols")
LINK_PHYSICS_FAMILIES: tuple[Family, ...] = (PRE_FEC_BER, LANE_BIT_RATE, FEC_MARGIN)
# diagnosis (consumers/diagnosis/consumer.py, docs/diagnosis.md)
DIAGNOSIS = _gauge(
    "nic_diagnosis", "A diagnosis signature (docs/diagnosis.md) that holds on this interface "
    "over the diagnosis window: signature names it, priority or lane where it is per priority "
    "(\"global\" for 802.3x PAUSE) or per lane (\"\" otherwise); value 1, present only while "
    "it holds. `nicwatch diagnose` shows the evidence.", labels=("signature", "priority", "lane"))
DIAGNOSIS_SINCE = _gauge(
    "nic_diagnosis_since_timestamp_seconds", "Wall-clock time since which the diagnosis "
    "signature has held without a break (as seen by this daemon); present only while it "
    "holds.", labels=("signature", "priority", "lane"), unit="seconds")
DIAGNOSIS_FAMILIES: tuple[Family, ...] = (DIAGNOSIS, DIAGNOSIS_SINCE)
# the port's role in the fabric (consumers/fabric.py, docs/fabric.md "Fleet drift")
FABRIC_ROLE = _gauge(
    "nic_fabric_role_info", "The role the operator gave this host's ports ([fabric] role, "
    "--fabric.role); value 1. The fleet drift rules compare each configuration among the "
    "ports of one role across hosts.", labels=("role",))
CONSUMER_FAMILIES: tuple[Family, ...] = (EXPECTATION_VIOLATION, EXPECTATION_CHECKS,
                                         IDENTITY_CHANGES, SOFTIRQ_RATIO, *RXPATH_FAMILIES,
                                         *INCIDENT_FAMILIES, *LINK_PHYSICS_FAMILIES,
                                         *DIAGNOSIS_FAMILIES, FABRIC_ROLE)

# self-metrics (labels are all of a series' labels: these carry no implicit device label)
BUILD_INFO = _gauge("nicwatch_build_info", "nicwatch version and Python runtime; value 1.",
                    labels=("version", "python"))
INTERFACES = _gauge("nicwatch_interfaces", "Interfaces polled in the last poll.")
POLLS = _counter("nicwatch_polls_total", "Polls completed since start.")
SKIPPED_POLLS = _counter("nicwatch_skipped_polls_total", "Poll slots skipped because the "
                         "previous poll overran the interval.")
LAST_POLL = _gauge("nicwatch_last_poll_timestamp_seconds", "Wall-clock time the last poll "
                   "finished.", unit="seconds")
LAST_POLL_AGE = _gauge(
    "nicwatch_last_poll_age_seconds", "Seconds since the last completed poll, computed when this "
    "scrape was answered (no kernel read). Grows without bound while the poller hangs or every "
    "poll fails; /readyz fails once it exceeds 3 poll intervals (at least 1 s).", unit="seconds")
POLL_INTERVAL = _gauge("nicwatch_poll_interval_seconds", "Configured poll interval.",
                       unit="seconds")
POLL_DURATION = _gauge("nicwatch_poll_duration_seconds", "Duration of the last poll by stage "
                       "(read: kernel sources; normalize; track; render: the previous render).",
                       labels=("stage",), unit="seconds")
SOURCE_ERRORS = _counter("nicwatch_source_errors_total", "Failed source reads by source and "
                         "interface (unsupported calls are not errors). source=netns, device "
                         "\"\": polls where --path.sysfs and the daemon's network namespace "
                         "disagreed, so nothing was read through kernel sockets.",
                         labels=("device", "source"))
RDMA_COUNTER_SKIPPED = _gauge(
    "nicwatch_rdma_counters_skipped", "RDMA counters not asked in the last poll because they "
    "failed with this errno (EINVAL, EOPNOTSUPP, EPERM, EACCES, EIO, ENOSYS: a driver or its "
    "firmware refusing the query, as on Fabric-Manager limited PFs) and are backed off: asked "
    "again after a minute, then twice as long each time they fail again, at most an hour; "
    "logged once when they start failing. device is the RDMA device; a port's whole netlink "
    "request counts as one (its counters then come from sysfs).", labels=("device", "reason"))
RDMA_SOURCE = _gauge(
    "nicwatch_rdma_source", "RDMA ports of this RDMA device whose hardware counters the last "
    "poll read through this source: netlink (RDMA_NLDEV_CMD_STAT_GET) or sysfs (hw_counters/ "
    "files: no RDMA netlink, a fixture tree, or the port's netlink request failing).",
    labels=("device", "source"))
RDMA_PORTS = _gauge("nicwatch_rdma_ports", "RDMA ports read in the last poll (after the "
                    "device include/exclude).")

SOURCE_UP = _gauge("nicwatch_source_up", "1 when this source's read in the last poll "
                   "completed without failing as a whole; 0 when it raised or failed as a "
                   "whole (its kernel interface unavailable, a dump refused): then its parts of "
                   "every interface are missing and every other source's are served. "
                   "Failures for single interfaces leave it 1 (nicwatch_source_errors_total).",
                   labels=("source",))
SOURCE_DURATION = _gauge("nicwatch_source_duration_seconds", "Wall-clock duration of this "
                         "source's read in the last poll (part of the read stage of "
                         "nicwatch_poll_duration_seconds).", labels=("source",), unit="seconds")
COLLECTOR_ENABLED = _gauge(
    "nicwatch_collector_enabled", "1 when this collector switch (--[no-]collector.NAME) is on, "
    "0 when --no-collector.NAME or --collector.disable-defaults turned it off: its sources are "
    "not read and its consumers not fed, so their series are absent by choice (not a failure, "
    "not stale). A switch that is on may still find its kernel interface missing "
    "(nicwatch_source_up, the start-up \"watching\" line).", labels=("collector",))
UEVENTS = _counter("nicwatch_uevents_total", "Kernel uevents of network interfaces by outcome: "
                   "taken (asked for an early poll), coalesced (joined an early poll already "
                   "pending: at most one a second after the previous poll) or ignored (an "
                   "interface the selection leaves out).", labels=("outcome",))
SELF: tuple[Family, ...] = (BUILD_INFO, INTERFACES, POLLS, SKIPPED_POLLS, UEVENTS, LAST_POLL,
                            LAST_POLL_AGE, POLL_INTERVAL, POLL_DURATION, SOURCE_ERRORS,
                            SOURCE_UP, SOURCE_DURATION, COLLECTOR_ENABLED,
                            RDMA_COUNTER_SKIPPED, RDMA_SOURCE,
                            RDMA_PORTS)

