"""Build hook: copy the deployment files (systemd units, rules, dashboards, Kubernetes
manifests, example configuration), the rule generator and the docs into the package as
nicwatch/share/<repository path>, so `nicwatch deploy` works from a wheel. The lists are
DEPLOY_FILES and GENERATOR in the deploy command's module, read here without importing
nicwatch, and every docs/**/*.md; the repository's files stay the only copy."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
PACKAGE = HERE / "src" / "nicwatch"


def deploy_files() -> list[str]:
    """Every repository path named in the DEPLOY_FILES and GENERATOR literals of the
    package, and every docs/**/*.md."""
    for module in sorted(PACKAGE.rglob("*.py")):
        if "DEPLOY_FILES" not in (text := module.read_text()):
            continue
        literals = {}
        for node in ast.parse(text).body:
            target = node.target if isinstance(node, ast.AnnAssign) else (
                node.targets[0] if isinstance(node, ast.Assign) else None)
            if isinstance(target, ast.Name) and target.id in ("DEPLOY_FILES", "GENERATOR"):
                literals[target.id] = ast.literal_eval(node.value)
        if len(literals) == 2:
            paths = {path for files in literals["DEPLOY_FILES"].values()
                     for path in files.values()}
            docs = {str(p.relative_to(HERE)) for p in (HERE / "docs").rglob("*.md")}
            return sorted(paths | {literals["GENERATOR"]} | docs)
    raise SystemExit("setup.py: DEPLOY_FILES and GENERATOR not found under src/nicwatch")


class BuildWithDeployFiles(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads the files from the tree itself
        share = Path(self.build_lib) / "nicwatch" / "share"
        shutil.rmtree(share, ignore_errors=True)  # nothing left from an earlier build
        for path in deploy_files():
            source, target = HERE / path, share / path
            if not source.is_file():
                raise SystemExit(f"setup.py: {path}: missing (listed in DEPLOY_FILES)")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)


setup(cmdclass={"build_py": BuildWithDeployFiles})
