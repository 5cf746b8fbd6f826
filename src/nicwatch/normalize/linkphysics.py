"""Link physics: the serdes rate of each lane, the FEC code in use, the pre-FEC bit error
ratio per lane and the FEC histogram's margin (docs/link-physics.md).

Pure functions over one Sample and the tracker's per-second rates of its counters (a ratio
needs two polls): the link-physics consumer exports them, ``nicwatch check`` and ``show``
read the same evaluation.

The lane rate is the serdes bit rate on the wire, not the nominal speed divided by the lanes:
64b/66b coding, 256b/257b transcoding and the RS parity put a 50G PAM4 lane at 26.5625 GBd x
2 bits = 53.125 Gb/s. FEC decodes idle codewords as well as frames, so the ratio's
denominator is the line, not the traffic.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Protocol

from nicwatch.model import SeriesKey

SPEED = "nic_link_speed_bytes_per_second"
LANES = "nic_link_lanes"
FEC_MODE = "nic_fec_mode_info"
LANE_BIT_ERRORS = "nic_fec_lane_bit_errors_total"
CORRECTED_BITS = "nic_fec_corrected_bit_errors_total"
CODEWORDS = "nic_fec_codewords_total"
TOTAL = "total"


@dataclass(frozen=True, slots=True)
class LaneRate:
    """One lane of a link mode on the wire: ``bits_per_second`` (the serdes bit rate),
    ``baud`` and ``modulation``; ``rs_code`` the Reed-Solomon code IEEE 802.3 pairs with it
    ("rs544" for PAM4 lanes, "rs528" for 25G NRZ lanes); ``source`` the clause."""

    bits_per_second: float
    baud: float
    modulation: str
    rs_code: str
    source: str


# Nominal data rate per lane (link speed / lanes, Gb/s) -> the lane on the wire.
LANE_RATES: Mapping[int, LaneRate] = MappingProxyType({
    10: LaneRate(10.3125e9, 10.3125e9, "NRZ", "rs528",
                 "IEEE 802.3 clause 49 (64b/66b at 10.3125 GBd; 40GBASE-R4 clause 82)"),
    25: LaneRate(25.78125e9, 25.78125e9, "NRZ", "rs528",
                 "IEEE 802.3 clause 107-111 (25GBASE-R, 802.3by) and 91 (100GBASE-R4): "
                 "25.78125 GBd NRZ"),
    50: LaneRate(53.125e9, 26.5625e9, "PAM4", "rs544",
                 "IEEE 802.3cd clause 133-138 (50GBASE-R, 100GBASE-R2, 200GBASE-R4) and 802.3bs "
                 "clause 120 (400GBASE-R8): 26.5625 GBd PAM4"),
    100: LaneRate(106.25e9, 53.125e9, "PAM4", "rs544",
                  "IEEE 802.3ck clause 161-163 (100GBASE-R1, 200GBASE-R2, 400GBASE-R4) and "
                  "802.3df (800GBASE-R8): 53.125 GBd PAM4"),
    200: LaneRate(212.5e9, 106.25e9, "PAM4", "rs544",
                  "IEEE 802.3dj (200 Gb/s per lane): 106.25 GBd PAM4"),
})


@dataclass(frozen=True, slots=True)
class FecCode:
    """A FEC code's correction capability: ``symbols`` (t, symbols it corrects per
    codeword; None for a code without a symbol histogram), ``ber_limit`` the pre-FEC bit
    error ratio the standard designs the code for, and where that is stated; ``threshold``
    the ratio a lane may not exceed (the one number the check ``fec_lane_ber`` and the
    ``physical_layer`` diagnosis read, and deploy/prometheus/thresholds.toml's
    NicPreFecBerHigh.by_fec defaults, a test keeps them equal): a decade below ``ber_limit``,
    where a healthy link still corrects everything; without FEC the PCS objective itself."""

    name: str
    symbols: int | None
    ber_limit: float
    source: str
    threshold: float


FEC_CODES: Mapping[str, FecCode] = MappingProxyType({
    "rs544": FecCode("rs544", 15, 2.4e-4,
                     "RS(544,514) \"KP4\", IEEE 802.3 clause 91.5.2.7 (t = 15 10-bit symbols); "
                     "802.3bs/cd PMDs are specified to a pre-FEC BER of 2.4e-4 (e.g. clause "
                     "138.1 50GBASE-SR, 124.1 400GBASE-DR4)", 2.4e-5),
    "rs528": FecCode("rs528", 7, 5e-5,
                     "RS(528,514) \"KR4\", IEEE 802.3 clause 91 (t = 7); 100GBASE-SR4 (clause "
                     "95.1) and 25GBASE-SR (clause 112.1) are specified to a BER of 5e-5 "
                     "before it", 5e-6),
    "llrs": FecCode("llrs", 7, 5e-5,
                    "RS(272,257+1) low-latency RS (Ethernet Technology Consortium, t = 7): "
                    "no published BER target found; the RS(528,514) one is used",
                    5e-6),
    "baser": FecCode("baser", None, 5e-8,
                     "BASE-R (Fire code) FEC, IEEE 802.3 clause 74 [approx: 802.3by "
                     "25GBASE-CR-S/KR-S with BASE-R FEC, BER objective order 1e-8]", 5e-9),
    "none": FecCode("none", None, 1e-12,
                    "no FEC: the PCS BER objective of IEEE 802.3 clause 82/107 (1e-12); every "
                    "bit error is a damaged frame", 1e-12),
})


def lane_rate(speed_mbps: float | None, lanes: int | None) -> LaneRate | None:
    """The lane of a link of ``speed_mbps`` over ``lanes`` lanes (None: unknown or a mode
    outside :data:`LANE_RATES`, e.g. 1G)."""
    if not speed_mbps or not lanes:
        return None
    per_lane = speed_mbps / lanes / 1000
    return LANE_RATES.get(round(per_lane)) if per_lane == round(per_lane) else None


def fec_code(active: str | None, rate: LaneRate | None) -> str | None:
    """The code behind the kernel's active FEC mode name (FEC_GET reports only "rs"; the
    lane's modulation says which RS code IEEE 802.3 uses there). None: not known."""
    if active == "rs":
        return rate.rs_code if rate is not None else None
    return {"baser": "baser", "off": "none", "llrs": "llrs"}.get(active or "")


@dataclass(frozen=True, slots=True)
class LinkPhysics:
    """One interface between two polls. ``ber``: lane ("0".., "total") -> pre-FEC BER;
    ``margin``: lane -> symbols of correction left (see :func:`evaluate`)."""

    lanes: int | None
    rate: LaneRate | None
    fec: str | None
    ber: Mapping[str, float]
    margin: Mapping[str, int]

    def worst_lane(self) -> tuple[str, float] | None:
        """The lane with the highest BER (not "total"), or None."""
        lanes = [(lane, ber) for lane, ber in self.ber.items() if lane != TOTAL]
        return max(lanes, key=lambda item: item[1]) if lanes else None


class Gauged(Protocol):
    """What the evaluation reads: a Sample, or a snapshot's record of one."""

    @property
    def gauges(self) -> Mapping[SeriesKey, float]: ...


def _gauge(sample: Gauged, metric: str) -> float | None:
    return sample.gauges.get(SeriesKey(metric))


def _active_fec(sample: Gauged) -> str | None:
    for key in sample.gauges:
        if key.metric == FEC_MODE:
            return dict(key.labels).get("active") or None
    return None


def evaluate(sample: Gauged, rates: Mapping[SeriesKey, float | None]) -> LinkPhysics:
    """Pre-FEC BER per lane and in total, and the histogram margin, from the counters'
    per-second ``rates`` over the last poll (the tracker's; None or absent: no rate)."""
    speed = _gauge(sample, SPEED)
    lanes_value = _gauge(sample, LANES)
    lanes = int(lanes_value) if lanes_value else None
    rate = lane_rate(speed * 8 / 1e6 if speed else None, lanes)
    fec = fec_code(_active_fec(sample), rate)
    ber: dict[str, float] = {}
    margin_seen: dict[str, int] = {}
    if rate is not None and lanes:
        for key, per_second in rates.items():
            if per_second is None or per_second < 0:
                continue
            if key.metric == LANE_BIT_ERRORS:
                ber[dict(key.labels).get("lane", "")] = per_second / rate.bits_per_second
            elif key.metric == CORRECTED_BITS and not key.labels:
                ber[TOTAL] = per_second / (rate.bits_per_second * lanes)
    code = FEC_CODES.get(fec or "")
    if code is not None and code.symbols is not None:
        for key, per_second in rates.items():
            if key.metric != CODEWORDS or per_second is None or per_second <= 0:
                continue
            labels = dict(key.labels)
            lane = labels.get("lane", TOTAL)
            high = int(labels.get("bin_high", "0"))
            margin_seen[lane] = max(margin_seen.get(lane, 0), high)
    margin = {lane: code.symbols - high for lane, high in margin_seen.items()} \
        if code is not None and code.symbols is not None else {}
    return LinkPhysics(lanes, rate, fec, MappingProxyType(ber), MappingProxyType(margin))
