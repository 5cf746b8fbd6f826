"""The metric contract: every family nicwatch exports, with its meaning and unit.

This package is the single source of truth for names, types, labels and HELP text: the
canonical families driver tables map into, and the families of the tracker, the consumers
(checks, identity, softirq load) and the daemon itself (nicwatch_*). The exporter and the
consumers name families through it, and docs/metrics.md is generated from it.
"""

from __future__ import annotations

from nicwatch.metrics.contract import *  # noqa: F403
from nicwatch.metrics.counters import *  # noqa: F403
from nicwatch.metrics.family import *  # noqa: F403
from nicwatch.metrics.gauges import *  # noqa: F403
from nicwatch.metrics.module import *  # noqa: F403
from nicwatch.metrics.own import *  # noqa: F403
from nicwatch.metrics.rdma import *  # noqa: F403
from nicwatch.metrics.tiers import *  # noqa: F403
