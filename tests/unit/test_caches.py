"""Every module-level cache in src/nicwatch is a memo listed in docs/architecture.md
("Caches"): a new cache must be given an owner (the Normalizer, the source) or be listed there
as a pure function of a bounded key."""

from __future__ import annotations

import ast
import re

from paths import REPO

SRC = REPO / "src" / "nicwatch"


def _module_caches() -> set[str]:
    found = set()
    for path in SRC.rglob("*.py"):
        mod = ".".join(path.relative_to(SRC).with_suffix("").parts)
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef):
                for d in node.decorator_list:
                    call = d.func if isinstance(d, ast.Call) else d
                    name = call.attr if isinstance(call, ast.Attribute) else getattr(call, "id", "")
                    if name in ("lru_cache", "cache"):
                        found.add(f"{mod}.{node.name}")
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                ann = ast.unparse(node.annotation)
                if re.match(r"dict\[type\b", ann):
                    found.add(f"{mod}.{node.target.id}")
    return found


def test_every_module_level_cache_is_listed():
    text = (REPO / "docs" / "architecture.md").read_text()
    section = text[text.index("## Caches"):text.index("## Rules the code keeps")]
    listed = set()
    for row in section.splitlines():
        if row.startswith("| `"):
            first = row.split("|")[1]
            names = re.findall(r"`([\w.]+)`", first)
            prefix = names[0].rpartition(".")[0]
            listed |= {n if "." in n else f"{prefix}.{n}" for n in names}
    caches = _module_caches()
    assert len(caches) >= 14, caches  # the scan finds what is there
    assert caches <= listed, f"not listed in docs/architecture.md: {sorted(caches - listed)}"
    assert listed <= caches, f"listed but gone: {sorted(listed - caches)}"
