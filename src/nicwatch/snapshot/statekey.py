"""The state part of a snapshot (configuration and link state of a Reading, as JSON values)
and its key: two readings with equal state keys have equal state, and comparing keys costs
less than building the state (the flight recorder does it for every interface every poll)."""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from nicwatch.model import (
    PcieVerdict,
    Reading,
)
from nicwatch.normalize.state import channels_of, rings_of

# A pure memo per record class of nicwatch.model (docs/architecture.md, Caches).
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


def jsonable(obj: Any, skip: frozenset[str] = frozenset()) -> Any:
    """A source record as JSON values: dataclasses become objects (minus ``skip``)."""
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if dataclasses.is_dataclass(obj):
        return {name: jsonable(getattr(obj, name)) for name in _field_names(type(obj))
                if name not in skip}
    if isinstance(obj, Mapping):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (frozenset, set)):
        return sorted(jsonable(v) for v in obj)
    if isinstance(obj, (tuple, list)):
        return [jsonable(v) for v in obj]
    return str(obj)

# RdmaPort fields that hold counters (kept as raw stat sets, not state).
RDMA_COUNTER_FIELDS = frozenset({"hw_counters", "counters", "counters_ext"})


def reading_state(reading: Reading, pcie_verdict: PcieVerdict | None = None) -> dict[str, Any]:
    """Configuration and link state of a reading (and the PCIe verdict derived from it), as
    JSON values."""
    netlink = reading.netlink
    return {
        "link": jsonable(reading.netclass, frozenset({"stats"})),
        "driver_info": jsonable(reading.driver_info),
        "perm_address": reading.perm_address,
        "rings": jsonable(rings_of(reading)),
        "channels": jsonable(channels_of(reading)),
        "pause": jsonable(netlink.pause if netlink else None),
        "fec": jsonable(netlink.fec if netlink else None),
        "pcie": jsonable(reading.pcie),
        "pcie_verdict": jsonable(pcie_verdict),
        "rdma": [jsonable(p, RDMA_COUNTER_FIELDS) for p in reading.rdma],
        "devlink_port": jsonable(reading.devlink_port),
        "devlink_health": [jsonable(r) for r in reading.devlink_health],
        "hwmon": jsonable(reading.hwmon, frozenset({"temperatures"})),
        "devlink_info": jsonable(reading.devlink_info),
        "errors": [jsonable(e) for e in reading.errors],
    }


# Fields of the records reading_state reads that hold counters, not state.
# ("temperatures": the hwmon readings, measurements that change every poll, exported as
# gauges; the device they come from stays state.)
_COUNTER_FIELDS = frozenset({"time", "monotonic", "stats", "std_stats", "hw_counters",
                             "counters", "counters_ext", "temperatures", "softnet",
                             "queue_stats"})
# Fields of such records that hold records with counters of their own, taken element by
# element (ReceivePath.irqs: each Irq's per-CPU counts move every poll).
_NESTED_FIELDS = frozenset({"irqs"})


# A pure memo per record class of nicwatch.model (docs/architecture.md, Caches).
_STATE_FIELDS: dict[type, tuple[str, ...] | None] = {}
# Per record class with counter fields, one C-level getter of its other fields (a tuple).
# A pure memo per record class of nicwatch.model (docs/architecture.md, Caches).
_STATE_GETTERS: dict[type, Callable[[Any], tuple[Any, ...]] | None] = {}


def _state_fields(cls: type) -> tuple[str, ...] | None:
    """The fields of a record class that are not counters; None when all are."""
    if cls not in _STATE_FIELDS:
        names = _field_names(cls) if dataclasses.is_dataclass(cls) else ()
        _STATE_FIELDS[cls] = (tuple(n for n in names if n not in _COUNTER_FIELDS)
                              if _COUNTER_FIELDS.intersection(names) else None)
    return _STATE_FIELDS[cls]


def _state_getter(cls: type) -> Callable[[Any], tuple[Any, ...]] | None:
    """None for a value compared as it is; else what takes its non-counter fields."""
    try:
        return _STATE_GETTERS[cls]
    except KeyError:
        names = _state_fields(cls)
        getter: Callable[[Any], tuple[Any, ...]] | None
        if names is not None and _NESTED_FIELDS.intersection(names):
            getter = partial(_nested_state, names)
        else:
            getter = (None if names is None else
                      (lambda obj, n=names[0]: (getattr(obj, n),)) if len(names) == 1 else
                      operator.attrgetter(*names))
        _STATE_GETTERS[cls] = getter
        return getter


def _nested_state(names: tuple[str, ...], obj: Any) -> tuple[Any, ...]:
    return tuple([_without_counters(getattr(obj, n)) if n in _NESTED_FIELDS else getattr(obj, n)
                  for n in names])


def _without_counters(obj: Any) -> Any:
    """``obj`` itself (compared with ==), or, for a record with counter fields, its other
    fields as a tuple; tuples of records element by element."""
    cls = type(obj)
    if cls is tuple:
        return tuple([_without_counters(x) for x in obj])
    getter = _STATE_GETTERS[cls] if cls in _STATE_GETTERS else _state_getter(cls)
    return obj if getter is None else getter(obj)


_READING_FIELDS: tuple[str, ...] = _state_fields(Reading) or ()  # Reading has counter fields
_READING_STATE = operator.attrgetter(*_READING_FIELDS)  # Reading's state fields


def state_key(reading: Reading,
              pcie_verdict: PcieVerdict | None = None) -> tuple[Any, ...]:
    """Every field of the reading but its counters and times (records within it too), and
    the verdict: two readings with equal keys have equal :func:`reading_state`, and
    comparing keys costs less than building the state. Any field a source adds to the
    Reading is part of the key unless it is named in _COUNTER_FIELDS. Called for every
    interface every poll (the flight recorder), so the fields are taken by C getters."""
    return (tuple([_without_counters(v) for v in _READING_STATE(reading)]), pcie_verdict)


