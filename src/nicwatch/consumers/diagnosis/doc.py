"""Generate docs/diagnosis.md from the signature table:
`python -m nicwatch.consumers.diagnosis.doc`."""

from __future__ import annotations

import inspect
import re
import sys

from nicwatch import metrics
from nicwatch.consumers.diagnosis.quantities import DIRECTIONS, QUANTITIES
from nicwatch.consumers.diagnosis.signatures import SIGNATURES
from nicwatch.consumers.diagnosis.windows import WINDOW

# What each driver table gives the flow-control and drop-ratio signatures (docs/diagnosis.md).
_FLOW_ROWS = (
    ("driver", "frames (drop ratio denominator)", "pause duration", "XON apart", "PFC",
     "blind or estimated"),
    ("mlx5_core", "`rx_packets_phy`", "per priority, global", "no",
     "per priority (PFC-enabled only)",
     "802.3x PAUSE on a PFC port (pause_ctrl counts PFC too): unknown"),
    ("bnxt_en", "`rx_total_frames`", "per priority (extended stats)", "no", "per priority",
     "802.3x PAUSE: estimated"),
    ("ice", "`rx_unicast.nic` + `rx_multicast.nic` + `rx_broadcast.nic`", "none", "yes",
     "per priority", "paused fractions estimated"),
    ("i40e", "`port.rx_unicast` + `port.rx_multicast` + `port.rx_broadcast`", "none", "yes",
     "per priority", "paused fractions estimated"),
    ("ixgbe", "`rx_pkts_nic`", "none", "yes", "per traffic class", "paused fractions estimated"),
    ("be2net", "`rxqN: rx_pkts` (the queues', not the port's)", "none", "no (XON counted in)",
     "total only", "estimated; drops before a queue are not in the denominator; no byte "
     "counter: a storm's \"nothing received\" reads frames x 16,383 bytes (an upper bound)"),
    ("e1000e", "`rx_packets` (stats.gprc, the MAC's good packets)", "none", "yes", "none",
     "paused fractions estimated"),
    ("ena, virtio_net, veth", "the netdev's packets only", "none", "-", "none",
     "flow control signatures unknown (no PAUSE)"),
)
_FLOW_TABLE = "\n".join(["| " + " | ".join(r) + " |" for r in _FLOW_ROWS[:1]]
                        + ["|" + "---|" * len(_FLOW_ROWS[0])]
                        + ["| " + " | ".join(r) + " |" for r in _FLOW_ROWS[1:]])

# The paused-fraction range on cases evaluated here, by the engine, when the doc is generated
# (so the table cannot drift from the code): (case, link Gb/s, direction, XOFF/s, XON/s,
# rx traffic share of the line, the signature it is held to).
_RANGE_CASES = (
    ("ice 100G, received", 100, "rx", 600, 600, 0.9, "paused_by_peer"),
    ("ice 100G, sent", 100, "tx", 600, 600, 0.9, "pausing_peer"),
    ("ice 100G, received", 100, "rx", 600, 100, 0.9, "paused_by_peer"),
    ("ice 100G, received", 100, "rx", 1200, 100, 0.9, "paused_by_peer"),
    ("ice 100G, received, never released", 100, "rx", 600, 0, 0.9, "paused_by_peer"),
    ("ice 100G, healthy incast, received", 100, "rx", 89, 89, 0.9, "paused_by_peer"),
    ("400G lossless incast, received", 400, "rx", 2000, 2000, 0.9, "paused_by_peer"),
    ("ixgbe 10G, sent, nothing received", 10, "tx", 23400, 0, 0.0, "pause_storm"),
    ("ice 100G, sent, nothing received", 100, "tx", 23400, 1, 0.0, "pause_storm"),
)


def _range_row(case: str, gbps: int, direction: str, xoff: int, xon: int, rx_share: float,
               signature: str) -> tuple[str, ...]:
    from nicwatch.consumers.diagnosis.engine import Window, evaluate, unknowns
    from nicwatch.consumers.diagnosis.signatures import (
        BY_NAME,
        MAX_PAUSE_QUANTA,
        PAUSE_QUANTUM_BITS,
    )
    from nicwatch.model import SeriesKey

    line = gbps * 1e9 / 8
    rates = {SeriesKey(metrics.PHY_RX_BYTES.name): rx_share * line,
             SeriesKey(metrics.PHY_RX_PACKETS.name): rx_share * line / 1500,
             SeriesKey(DIRECTIONS[direction].pause_frames): float(xoff),
             SeriesKey(DIRECTIONS[direction].pause_xon_frames): float(xon)}
    w = Window("x", 1.0, rates, rates, {SeriesKey(metrics.LINK_SPEED_BYTES_PER_SECOND.name): line})
    quantity = next(c.quantity for c in BY_NAME[signature].conditions if c.required
                    and c.quantity.startswith(f"{direction}_pause_fraction"))
    m = QUANTITIES[quantity](w, "global")
    low = m.value or 0.0
    high = m.upper if m.upper is not None else low
    held = {v.signature for v in evaluate([w])}
    threshold = next(c.threshold for c in BY_NAME[signature].conditions
                     if c.quantity == quantity)
    uncapped = xoff * MAX_PAUSE_QUANTA * PAUSE_QUANTUM_BITS / (line * 8)
    undecided = 1 - 2 * threshold / uncapped if uncapped >= threshold else None
    above = ("" if undecided is None else
             f" (undecided where XON/XOFF > {undecided:.2g})" if undecided > 0 else
             " (undecided at any XON/XOFF: L stays below even with no XON)")
    if signature in held:
        verdict = f"`{signature}`{above}"
    elif any(u.signature == signature for u in unknowns([w])):
        verdict = f"unknown{above}"
    else:
        verdict = "none (the bound is harmless)" if high < threshold else "none"
    return (f"{case} (`{signature}`, {threshold:g})", f"{xoff:,}", f"{xon:,}", _pct(low),
            _pct(high), verdict)


def _pct(v: float) -> str:
    return "0" if v == 0 else f"{v * 100:.3g} %"


def _range_table() -> str:
    rows = [("case", "XOFF/s", "XON/s", "L", "U", "verdict"),
            *(_range_row(*c) for c in _RANGE_CASES)]
    return "\n".join(["  | " + " | ".join(rows[0]) + " |", "  |" + "---|" * len(rows[0]),
                      *("  | " + " | ".join(r) + " |" for r in rows[1:])])


_RANGE_TABLE = _range_table()

HEAD = f"""# Diagnosis: from counters to causes

<!-- generated by `python -m nicwatch.consumers.diagnosis.doc > docs/diagnosis.md`; edit
src/nicwatch/consumers/diagnosis/signatures.py and regenerate -->

nicwatch names the likely cause of what the counters show. Every poll, the diagnosis consumer
(src/nicwatch/consumers/diagnosis/consumer.py) evaluates the signatures below on each interface over
the last {WINDOW:g} s of polls, per PFC priority where a signature is per priority and per
serdes lane where it is per lane, and exports

* `nic_diagnosis{{device,signature,priority,lane}}` 1 while a signature holds (absent
  otherwise), and
* `nic_diagnosis_since_timestamp_seconds` with the same labels: since when it has held.

`nicwatch diagnose` evaluates the same signatures with the same function
(src/nicwatch/consumers/diagnosis/engine.py) live (`--window`, default 30 s), on two snapshots, a
`nicwatch record` directory, an incident directory, the daemon's history, or two pasted
`ethtool -S` outputs of one interface taken a known interval apart (`--driver`, `--interval`,
`--speed`). The record and incident reports open with a "Verdict" section; `show` (one poll)
has a DIAGNOSIS column with the signatures one reading supports (the RoCE QoS configuration).

## How a verdict is made

* A **window** is one interface over a span: the increase of each counter (never across a
  reset: the tracker's and `nicwatch diff`'s rule), the highest per-poll rate of each (the
  peak; from two readings only the mean is known, so a signature that needs a peak, such as
  `pcie_limited` or `pause_storm`, may hold in a series and not between two snapshots), and
  the gauges at its end.
* A **condition** compares one quantity computed from named series with a threshold.
  *Required* conditions decide: all must hold (or any one, where the signature says
  "any"). An absent series makes its condition unknown, and an unknown condition never
  holds: absent is not zero, and nothing is said to be fine for lack of data.
* *Supporting* conditions raise the **confidence** (the share of all conditions that held)
  and, where they hold, name the likely reason ("the rx ring is below its maximum").
* Each verdict lists its **evidence** (the series, their increase and rate over the window,
  the gauges) and **one next check or fix**.
* A signature can **supersede** another on the same interface and priority (a pause storm
  explains pausing the peer; a physical-layer fault, of the interface or of one of its lanes,
  explains RDMA transport loss); an interface's own verdict supersedes on every priority (a
  host receive bottleneck explains its pausing the peer, so the fault is named once).
* A **per-lane** signature (`physical_layer`) has a verdict of the interface itself (lane
  `""`: the conditions marked "the interface's verdict") and one per lane with a pre-FEC bit
  error ratio (`nic_pre_fec_ber{{lane,fec}}`, docs/link-physics.md, over the window) and a
  known FEC code, held to that code's threshold. Where no lane has a ratio (the driver
  reports no lane counters, the link mode no lane count, or the FEC code is unknown: a pasted
  `ethtool -S` pair, bnxt, ice), the interface's own verdict reads the port's total ratio
  against 1e-5 instead.
* **Configuration drift** (the configured `[[consistent]]` groups) is shown as the context
  of the other verdicts on the same interface; it is never a cause by itself.
* **Drop ratios divide by frames**: the netdev's packets (plus its RDMA ports'), else the
  port's own frame counter (`nic_phy_rx_packets_total`, table below), never bytes / 64 while
  a frame counter exists. A 2e-3 drop ratio of 1,500-byte traffic is 2e-3, where bytes / 64
  read it as 8.5e-5. Only a driver table with no frame counter at all falls back to the most
  frames the bytes can be (bytes / 64, never more than the link carries: line rate / 84
  bytes on the wire, 148.8 Mpps at 100G), and the evidence says it is that last resort.

## Flow control: durations decide, frames only estimate

A pause is an XOFF (pause_time > 0) and, usually, its release, an XON (pause_time 0). The
PAUSE and PFC families count XOFF where the driver counts XON apart (ixgbe, i40e, ice,
e1000e: XON is in `nic_*_pause_xon_frames_total` and `nic_*_pfc*_xon_frames_total`), so one
pause episode counts once; mlx5, bnxt and be2net count them together.

* Where the driver counts **pause durations** (mlx5 per priority and global, bnxt per priority
  with firmware that has extended port statistics) the paused fraction is the duration's
  rate, and frame counts decide nothing: 2,000 PFC frames/s at 1 % paused (ordinary incast
  on a busy RoCE port) holds nothing.
* Where it does not, the fraction is **estimated** from frames. One pause quantum is 512
  bit times and an XOFF carries at most 0xFFFF quanta (also what ixgbe,
  `IXGBE_DEFAULT_FCPAUSE`, and i40e, `I40E_DEFAULT_PAUSE_TIME`, send by default), so an XOFF
  pauses for at most Tq = 65,535 x 512 / link bit/s: 3.36 ms at 10G, 1.34 ms at 25G, 0.84 ms
  at 40G, 0.34 ms at 100G, 84 us at 400G. XOFF/s x Tq, capped at 1, is an **upper bound**
  U. How long each pause lasted the frames do not say: an XON (pause_time 0) ends it after
  anything from 0 to Tq, and a sender that holds a pause refreshes it with the next XOFF
  before it expires (ixgbe every half: `IXGBE_FCRTV = pause_time / 2`; i40e likewise).
* Where the driver counts **XON apart** (ixgbe, i40e, ice, e1000e) the fraction is a
  **range**: an XOFF no XON released lasted at least until the sender's refresh, so the
  paused fraction is at least L = (XOFF - XON)/s x Tq x 0.5 and at most U. The range decides
  only where all of it is on one side of the threshold (0.10 victim, 0.05 source, 0.8 of a
  poll for a storm): held where L reaches it, not held where U stays below it (a harmless
  bound proves the port healthy), and otherwise **unknown**: listed as "unknown from frames
  (released by XON, no duration counter)", never a verdict. Pauses count as released
  explicitly, too many for the frames to decide, where XON/XOFF > 1 - 2 x threshold / U
  (U before the cap) while U reaches the threshold. The table is evaluated by the engine
  when this page is generated:

{_RANGE_TABLE}

* The alerts read the same estimate where no duration is counted: NicRxPauseFramesHigh and
  NicTxPauseFramesHigh compare the lower end where XON is counted apart, else the upper
  bound, with the same fractions (recording rules
  `priority:nic_{{rx,tx}}_paused_ratio_estimated_{{min,max}}:rate5m`, docs/alerts.md).
* Where the driver counts XON **in** the PAUSE/PFC frames (be2net; mlx5 and bnxt 802.3x PAUSE
  without a duration) there is no range: U decides, held to the same thresholds, and the
  evidence says "estimated ... an upper bound". That is the blind spot: many short pauses
  each ended by an XON read as long ones there. Without the link speed the fraction is
  unknown.
* ixgbe counts PFC per traffic class (packet buffer), not per priority: those signatures
  have scope `tcN` (`priority="tc3"`). be2net counts PFC only in total: scope `all`.

{_FLOW_TABLE}

## Pasted input, and what cannot be trusted

`nicwatch diagnose --ethtool BEFORE AFTER --driver D --interval N` (or the two text files as
plain paths with `--driver`: a path that is no JSON or gzip snapshot is read as pasted
`ethtool -S`) makes one window of two outputs. `--speed`, `--lanes` and `--fec` give the
link's speed, lane count and active FEC mode (rs, baser, llrs, off), which the outputs do not
carry: with all three, mlx5's `rx_err_lane_N_phy` become each lane's pre-FEC bit error ratio
and `physical_layer` names the bad lane as live polling does; without them the window's notes
name the lanes whose errors rose, worst first, and what is missing. `--rdma BEFORE AFTER`
adds the port's `rdma statistic show` outputs (one `link DEV/PORT name value ...` line a
port, wrapped lines, or `rdma -j`), mapped through the RDMA driver's hw_counter table into
the series live polling reads (labelled `rdma_device`, `port`); `link` lines pasted in the
same files as the `ethtool -S` outputs are read the same way. Pasted `ethtool -i` lines
are read too: their `bus-info` is the interface's PCI address.

Two outputs that cannot be one interface N seconds apart are **refused**, one line naming
the statistics and values that show it, exit status 2, never diagnosed:

* the **statistic set changed** (a reboot into another kernel renames statistics: mlx5's
  `rx_cache_*` became `rx_pp_*`; a driver reload or reconfiguration adds or drops some);
* a **counter fell** (a reset, swapped files, another interface), other than a 32-bit
  counter wrapping from the upper half of its range (the tracker's rule); an RDMA counter
  that fell, or RDMA ports or counter names that changed, likewise;
* an **increase no link carries** in the interval: bytes (`nic_phy_*_bytes_total`, else
  `nic_rx/tx_bytes_total`) above the line rate, or frames (packets, PAUSE, PFC) above the
  line rate over 84 bytes (the 64-byte minimum frame, 8 bytes of preamble and 12 of
  inter-frame gap). The line rate is `--speed`, else 800 Gb/s, the fastest Ethernet link
  (IEEE 802.3df). A stated interval can be short by the time `ethtool -S` takes to run, so
  only an increase beyond 1.1 times the line is refused.

A counter value above 2^64-1 is no `ethtool -S` reading (ethtool prints u64): `diagnose`
and `normalize` refuse it with one line naming the statistic, exit status 2.

**One reading alone** (`--ethtool FILE`, or one text path with `--driver`) is no window:
`diagnose` prints its totals since the counters started (every series the signatures read,
with the driver's statistics behind each), the ratios in which time cancels out (receive
drops per frame arriving, PAUSE/PFC frames sent per frame sent, CRC errors per frame, FEC
uncorrectable per corrected block; where the table maps no packet count, over the most
frames the bytes can be, 64 bytes each: a lower bound, marked "at least"), and why no rate
can be claimed: a rate is an increase over a known time, and one output has neither a second
reading nor the time its counters started from. It claims no verdict and exits 0.

## What could not be evaluated

"None holds" is said only of what was evaluated. After the verdicts, text and JSON
(`not_evaluated`) list every signature that neither held nor was ruled out by a known
condition: its required conditions without a value and the families the window lacked when
its quantities looked for them (a per-priority signature on a window without any priority's
series is listed as such). A quantity with no value that lacked nothing does not apply
there (ECN pairs with PFC on a priority, not with 802.3x PAUSE) and is not listed. Each
interface's notes (text, and `notes` in JSON) name what the window left out: series that
went backwards, appeared or disappeared between readings (snapshot.diff's statuses), and the
statistics the driver's table does not map. The record and incident reports' Verdict section
counts the signatures that could not be evaluated.

## Next checks

A next check is written with what the evidence knows: the interface, the priority or lane,
the PCI address (the sample's identity, a snapshot's, or pasted `ethtool -i` bus-info) in
place of `<pci address>`, and the rx ring's maximum (`nic_ring_max_descriptors{{ring="rx"}}`)
in place of `<max>`. A placeholder stays only where the value is unknown (a pasted
`ethtool -S` has no ring maximum).

## Live, on a terminal

Live `nicwatch diagnose` polls for its window (default 30 s). When its standard error is a
terminal it shows one progress line, rewritten each poll (seconds of the window done, the
interfaces polled, the verdicts holding), and a line when a verdict first holds or stops
holding; the progress line is cleared at the end. Piped or redirected, nothing of this is
written: the output is the report alone.

## Healthy busy links

High throughput, FEC correcting at a normal rate (pre-FEC BER around 1e-8) and occasional
PAUSE are not faults: tests/unit/consumers/diagnosis/test_engine.py keeps a 400G port at 80 %
of line rate both ways, with those, silent, and every signature has a positive and a negative
scenario there; the demo's scripted faults are each diagnosed as exactly their cause
(tests/unit/consumers/diagnosis/test_diagnosis.py; `nicwatch demo --ports 13` has one for every
signature but `tx_drops`, which tests/unit/consumers/diagnosis/test_engine.py covers: its pause
storm supersedes `pausing_peer`, so port 10 pauses its peer 30 % of the
time with traffic arriving and nothing dropped, and port 11's rx ring of 4,096 among 8,192s
is `config_drift` alone under the demo's `[[consistent]]` group, a context verdict of its own
where no other verdict holds to carry it).

The blind set (tests/unit/consumers/diagnosis/blind/cases.toml) keeps cases whose expected verdicts
were written down before the code that evaluates them changed: real `ethtool -S` dumps of
mlx5, ice, bnxt_en, ixgbe, i40e and be2net as BEFORE, a scenario's increments for AFTER,
evaluated as `nicwatch diagnose --ethtool` evaluates two pastes. Each of those drivers has a
healthy busy case there (90 % of line rate both ways, lossless incast at 1-5 % paused, FEC
correcting at a healthy ratio where the driver counts it) that holds nothing.

## After a restart

The window lives in the consumer's memory: per interface, the steps of the last {WINDOW:g} s,
one a poll (the increase of each counter the signatures read, the gauges, and the poll's
receive-path shares and `[[consistent]]` results). The daemon's flight recorder
(src/nicwatch/consumers/history.py) is in memory too and is not saved across a restart, so
nothing of the window survives one. After a restart the first poll holds nothing (one reading
is no window), the second gives verdicts over one poll interval (its peak is its mean), and
the window is whole again {WINDOW:g} s later. `nic_diagnosis_since_timestamp_seconds` starts
again at the first poll a verdict holds: a fault that held before the restart shows a new
since, and its alert's `for` starts again. A reload (SIGHUP) keeps the window and the since
times.

The window is not cut from the flight recorder every poll: on the 30-port demo that costs
about 156 ms a poll (windows.from_snapshots over `Recorder.since`, the last 30 s; CPU time,
load 3.7) against about 40 ms for the consumer's whole update measured alongside, and the
recorder keeps neither the receive-path shares nor the consistency results the signatures
read. After the fact, `nicwatch diagnose` reads a saved history (`nicwatch history`) the same
way it reads a record directory.

An interface whose window increased nothing and held nothing is not evaluated again while each
poll adds the same series at 0 with the same gauges: its window would be the same series, all
0, and every quantity the same, so nothing would hold again (a rate is 0 however long the
window). The step is still kept, so the poll a counter moves is evaluated over the whole
window. In benchmarks/run.py's 2,000 idle veth interfaces the consumer took 143.0 ms of a
poll in the run before this was built (3275fe0) and 27.6 ms in the run of docs/performance.md;
on busy ports nothing changes. A test holds the verdicts equal to a full evaluation at every poll
(tests/unit/consumers/diagnosis/test_diagnosis.py).

## Signatures
"""


def _condition(c: object) -> str:
    from nicwatch.consumers.diagnosis.signatures import Condition
    assert isinstance(c, Condition)
    kind = "required" if c.required else "supporting"
    kind += {"": "", "device": ", the interface's verdict", "lane": ", each lane's verdict"}[
        c.scope]
    return f"| {c.text} | `{c.quantity}` {c.op} {c.threshold:g} | {kind} |"


def reads(quantity: str) -> list[str]:
    """The series a quantity reads, as its source names them."""
    source = inspect.getsource(QUANTITIES[quantity])
    source = source[source.index("def "):]  # its body, not its @reads declaration
    series = set(re.findall(r"nic_[a-z_]+|[A-Z_]+\.name", source))
    return sorted({getattr(metrics, x[:-5]).name if x.endswith(".name") else x
                   for x in series})


RDMA_DRIVERS_HEAD = """## RDMA: one end of a queue pair, and the drivers that can see it

A host counts one end of each of its queue pairs: as requester, the NAKs it receives (RNR,
sequence) and the QPs that ran out of retries; as responder, the packets it dropped for want
of a receive WQE and those that arrived out of sequence. The peer's counters are on another
host, so every RDMA signature holds on this host's end alone; the peer's own nicwatch names
the other end. RDMA ports that no polled interface carries (an InfiniBand HCA's ports, which
have no netdev; RoCE over a bond the selection leaves out) are diagnosed on their own, under
the netdev's name where there is one, else as `rdma link` names the port (`mlx5_0/1`).

Each driver's hw_counters table (src/nicwatch/normalize/drivers/, from its kernel source)
decides what a signature can see there. Generated from the tables: for each RDMA signature
and driver, the required conditions whose series the driver's counters feed; **blind** where
none is fed (the verdict is unknown there, never "fine"). mlx5's `req_transport_retries_exceeded`
and `req_rnr_retries_exceeded` exist from Linux 6.9 (extended_err_cnts), bnxt_re's
`out_of_buffer`, `out_of_sequence` and CNP/ECN counters on gen P5/P7 chips (Thor, Thor2)
only; ionic, hns, qedr, erdma, siw and mlx4 have no table: blind to all of them.

Every RDMA threshold is one event in the window (derived in each signature's "Thresholds
from"): on a lossless fabric with receivers that keep ahead, none of these counters moves at
all. A busy port with a few CNPs and ECN marks and no error stays silent, on mlx5 (the real
ConnectX readings of prometheus/procfs' fixture, 0.7 of line rate of reads) and on bnxt_re in
both counter spellings, with every RDMA signature evaluated on known series
(tests/unit/consumers/diagnosis/test_rdma_verdicts.py).
"""


def rdma_coverage() -> list[str]:
    from nicwatch.consumers.diagnosis.signatures import TRANSPORT
    from nicwatch.normalize.rdma import DRIVERS
    drivers = list(DRIVERS.values())
    out = [RDMA_DRIVERS_HEAD, "| signature | " + " | ".join(d.key for d in drivers) + " |",
           "|---|" + "---|" * len(drivers)]
    for s in SIGNATURES:
        if s.klass != TRANSPORT:
            continue
        cells = []
        for d in drivers:
            fed = {c.metric for c in d.counters if c.metric}
            seen = [c.quantity for c in s.conditions
                    if c.required and fed & set(reads(c.quantity))]
            required = [c.quantity for c in s.conditions if c.required]
            if not seen:
                cells.append("**blind**")
            elif len(seen) == len(required):
                cells.append("yes")
            else:
                cells.append("only " + ", ".join(f"`{q}`" for q in seen))
        out.append(f"| `{s.name}` | " + " | ".join(cells) + " |")
    out.append("")
    return out


def render() -> str:
    out = [HEAD]
    for s in SIGNATURES:
        scope = {"device": "per interface", "priority": "per priority",
                 "lane": "per interface and per lane"}[s.scope]
        match = "all required conditions" if s.match == "all" else "any required condition"
        out += [f"### `{s.name}`: {s.title}", "",
                f"Class `{s.klass}`, {scope}; holds on {match}.", "",
                "| condition | test | role |", "|---|---|---|",
                *(_condition(c) for c in s.conditions), "",
                f"* **Next check or fix:** `{s.next_check}`",
                f"* **Thresholds from:** {s.source}",
                f"* **False positives:** {s.false_positives}"]
        if s.supersedes:
            out.append("* **Supersedes:** " + ", ".join(f"`{n}`" for n in s.supersedes))
        out.append("")
    out += rdma_coverage()
    out += ["## Quantities", "", "What each quantity reads "
            "(src/nicwatch/consumers/diagnosis/quantities.py; rates are per second over the "
            "window, counts are increases in it):", "",
            "| quantity | series |", "|---|---|"]
    for name in QUANTITIES:
        shown = ", ".join(f"`{x}`" for x in reads(name))
        out.append(f"| `{name}` | {shown.replace('{direction}', 'rx/tx')} |")
    out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    sys.stdout.write(render())
