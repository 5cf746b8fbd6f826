"""Reading exposition text in tests, and promtool's lint on it."""

import subprocess

from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_om
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


def check_strict(text: str, openmetrics: str, same_poll: bool = True) -> None:
    """The checks every served exposition must pass (also used on a real veth)."""
    families = list(text_string_to_metric_families(text))
    names = [f.name for f in families]
    assert len(names) == len(set(names)), "a family is declared twice in text 0.0.4"
    promtool_check(text)
    om_families = list(parse_om(openmetrics))  # raises on any violation
    om_names = [f.name for f in om_families]
    assert len(om_names) == len(set(om_names))
    assert openmetrics.endswith("# EOF\n")
    if not same_poll:
        return
    # The two formats carry the same samples.
    samples = {(s.name, tuple(sorted(s.labels.items())), s.value)
               for f in families for s in f.samples}
    om_samples = {(s.name, tuple(sorted(s.labels.items())), s.value)
                  for f in om_families for s in f.samples}
    assert samples == om_samples
