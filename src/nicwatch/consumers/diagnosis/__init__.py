"""Diagnosis: from counters to causes (docs/diagnosis.md).

A signature (signatures.py) is data: the conditions that must hold, each a named quantity
compared with a documented threshold, the evidence series, the one next check or fix and the
threshold's source. engine.py evaluates every signature over a
:class:`~nicwatch.consumers.diagnosis.engine.Window` of one interface (counter increases, peak
per-poll rates and gauges over a span of time), per priority or lane where the signature
applies. windows.py builds windows from what there is: the daemon's tracked polls
(consumer.py, the consumer), two snapshots, a record or incident directory, the daemon's
history, or two pasted `ethtool -S` outputs.
Every view (`/metrics`, `show`, the reports, `nicwatch diagnose`) calls the same
:func:`~nicwatch.consumers.diagnosis.engine.evaluate`, so a verdict means the same everywhere.
"""
