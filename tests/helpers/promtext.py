"""Reading exposition text in tests, and promtool's lint on it."""

import subprocess

from prometheus_client.parser import text_string_to_metric_families


def parse_exposition(text: str) -> dict[tuple[str, tuple], float]:
    """(sample name, sorted labels) -> value, parsed by prometheus_client's own parser."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def promtool_check(text: str) -> None:
    r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                       text=True)
    assert r.returncode == 0 and not r.stdout.strip() and not r.stderr.strip(), r.stdout + r.stderr


def series(name: str, **labels: str) -> tuple[str, tuple]:
    """The parse_exposition key of one series."""
    return name, tuple(sorted(labels.items()))
