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
