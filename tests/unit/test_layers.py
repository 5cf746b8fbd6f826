"""The import structure docs/architecture.md states ("Layering"), read from the code: no
import cycles, the model imports nothing else of nicwatch, sources import only the model, each
other and log, nothing but the CLI (and __main__) imports the CLI, config imports no consumer
(each consumer declares and parses its own section), and at most 8 modules sit flat at the
top of src/nicwatch. Imports under TYPE_CHECKING and inside functions count: they are the
same dependency, taken later."""

from __future__ import annotations

import ast
from pathlib import Path

from paths import REPO

SRC = REPO / "src"
PACKAGE = SRC / "nicwatch"
MAX_FLAT = 8


def _module(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _graph() -> dict[str, set[str]]:
    """module -> the nicwatch modules it imports (a name imported from a package resolves
    to the submodule when there is one). A package's edges to its own submodules are left
    out: its __init__ is the face that re-exports them, not a room that depends on them."""
    files = {_module(p): p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}

    def resolve(name: str) -> str | None:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for mod, path in files.items():
        base = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        out = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                prefix = node.module or ""
                if node.level:
                    up = base.split(".")[:len(base.split(".")) - node.level + 1]
                    prefix = ".".join(up + ([node.module] if node.module else []))
                targets = [prefix, *(f"{prefix}.{a.name}" for a in node.names)]
            else:
                continue
            for t in targets:
                if t == "nicwatch" or t.startswith("nicwatch."):
                    r = resolve(t)
                    if r and r != mod and not (path.name == "__init__.py"
                                               and r.startswith(mod + ".")):
                        out.add(r)
        graph[mod] = out
    return graph


def _under(mod: str, top: str) -> bool:
    return mod == f"nicwatch.{top}" or mod.startswith(f"nicwatch.{top}.")


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle, as the modules along it; None without one."""
    state: dict[str, int] = {}  # 1 on the path, 2 done
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for t in sorted(graph.get(m, ())):
            if state.get(t) == 1:
                return path[path.index(t):] + [t]
            if t not in state and (found := visit(t)):
                return found
        path.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (found := visit(m)):
            return found
    return None


def test_the_import_graph_has_no_cycle():
    assert _cycle(_graph()) is None


def test_no_arrow_points_back_up():
    wrong = []
    for mod, targets in _graph().items():
        for t in targets:
            if _under(mod, "model") and not _under(t, "model"):
                wrong.append(f"{mod} -> {t}: the model imports nothing above it")
            if _under(mod, "sources") and not any(_under(t, x) for x in ("sources", "model",
                                                                          "log")):
                wrong.append(f"{mod} -> {t}: sources import only the model, sources and log")
            if _under(t, "cli") and not (_under(mod, "cli") or mod == "nicwatch.__main__"):
                wrong.append(f"{mod} -> {t}: only the CLI imports the CLI")
            if mod == "nicwatch.config" and _under(t, "consumers"):
                wrong.append(f"{mod} -> {t}: consumers declare their own sections")
    assert wrong == []


def test_few_modules_sit_flat_at_the_top():
    flat = sorted(p.name for p in PACKAGE.glob("*.py")
                  if p.name not in ("__init__.py", "__main__.py"))
    assert len(flat) <= MAX_FLAT, flat


def test_the_checks_find_what_they_look_for():
    """The graph sees a cycle and a relative import (else the tests above prove nothing)."""
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    graph = _graph()
    assert "nicwatch.consumers.checks.evaluation" in graph["nicwatch.consumers.checks.consumer"]
    assert "nicwatch.config" in graph["nicwatch.consumers.checks.parsing"]
    assert "nicwatch.model" in graph["nicwatch.sources.netlink"] or \
        "nicwatch.model" in graph["nicwatch.sources"]
