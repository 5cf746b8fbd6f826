"""Records that flow between the stages: sources -> Reading -> normalize -> Sample -> tracker.

Everything here is immutable. ``None`` always means "the kernel or driver did not say",
never zero (see docs/architecture.md, "absent is not zero").
"""


from __future__ import annotations

from nicwatch.model.dcb import *  # noqa: F403
from nicwatch.model.device import *  # noqa: F403
from nicwatch.model.ethtool import *  # noqa: F403
from nicwatch.model.part import *  # noqa: F403
from nicwatch.model.pci import *  # noqa: F403
from nicwatch.model.rdma import *  # noqa: F403
from nicwatch.model.reading import *  # noqa: F403
from nicwatch.model.sample import *  # noqa: F403
