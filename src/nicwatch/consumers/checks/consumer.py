"""The configured expectations as a consumer of each poll."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import structlog

from nicwatch import metrics
from nicwatch.consumers import BaseConsumer
from nicwatch.consumers.checks.evaluation import (
    FAMILIES,
    CheckReport,
    evaluate,
    violation_series,
)
from nicwatch.consumers.checks.parsing import Expectations, expectations_of
from nicwatch.consumers.linkphysics import with_physics
from nicwatch.model import ExtraFamily

if TYPE_CHECKING:  # annotations only
    from nicwatch.collect import PollResult
    from nicwatch.consumers import Services
    from nicwatch.tracker import TrackedSample

log = structlog.get_logger("nicwatch")  # expectation warnings, as the daemon logged them


class ExpectationChecks(BaseConsumer):
    """The configured expectations as a :class:`~nicwatch.consumers.Consumer`: evaluated
    every poll into nic_expectation_violation and nicwatch_expectation_checks; each warning (a
    selector matching nothing) is logged once while it lasts. The last poll's evaluation is
    shared through Services: diagnosis reads its [[consistent]] results (``report_of``)."""

    def __init__(self, expectations: Expectations) -> None:
        self.expectations = expectations
        self._warnings: tuple[str, ...] = ()
        self._families: list[ExtraFamily] = []
        self._report: tuple[PollResult, CheckReport] | None = None  # the last poll's

    @classmethod
    def open(cls, config: Any, host: object = None,
             services: Services | None = None) -> ExpectationChecks:
        checks = cls(expectations_of(config))
        if services is not None:
            services.checks = checks
        return checks

    def observe(self, result: PollResult, tracked: Sequence[TrackedSample] = ()) -> None:
        report = evaluate(self.expectations, with_physics(tracked) if tracked
                          else result.samples)
        self._report = (result, report)
        for warning in set(report.warnings) - set(self._warnings):
            log.warning("expectation_warning", warning=warning)
        self._warnings = report.warnings
        series = violation_series(report)
        self._families = [metrics.extra(f, tuple((labels, v) for name, labels, v in series
                                                 if name == f.name))
                          for f in FAMILIES]

    def report_of(self, result: PollResult) -> CheckReport | None:
        """The evaluation of the poll ``result``; None unless it was the last observed."""
        if self._report is None or self._report[0] is not result:
            return None
        return self._report[1]

    def families(self) -> list[ExtraFamily]:
        return self._families

    def reconfigure(self, config: Any) -> None:
        self.expectations = expectations_of(config)
