"""The dashboard generator (grafana/generate.py, a script, not a package module), loaded once."""

import importlib.util
import sys
from pathlib import Path

from paths import REPO

GRAFANA = REPO / "grafana"


def load_script(path: Path, name: str):
    """A generator script (not a package module) imported under its own name."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


dashboards = load_script(GRAFANA / "generate.py", "grafana_generate")


# Dashboard variables as Grafana would fill them for a 1 s scrape interval.
VARIABLES = (("$__rate_interval", "15s"), ("$__range", "1m"), ("$__interval", "5s"),
             ("$job", ".+"), ("$instance", ".+"), ("$device", ".+"))


def queries(dash: dict) -> list[tuple[str, str]]:
    """Every panel query of a dashboard as Prometheus gets it: ("title (refId)", expression)."""
    out = []
    for panel, target in dashboards.iter_targets(dash):
        expr = target["expr"]
        for var, value in VARIABLES:
            expr = expr.replace(var, value)
        out.append((f"{panel['title']} ({target['refId']})", expr))
    return out
