"""The dashboards against Grafana's own published schema: npm @grafana/schema, the
TypeScript types Grafana generates from its CUE dashboard and panel schemas, one release
per supported Grafana major (10.4, 11.6, 12.4, 13.2; tests/grafana-schema/package.json,
installed by scripts/test with `npm ci`).

For every dashboard and release, the test writes a TypeScript module that assigns the
dashboard JSON, as an object literal, to the release's `Dashboard` type, each panel checked
with `satisfies` against the panel type with its plugin's own `Options` and custom
`FieldConfig` (timeseries, stat, table), and runs `tsc --noEmit --strict` on it. An object
literal gets TypeScript's excess property check at every depth, so a misspelt or unknown
key fails, as does a value of the wrong type or an enum value Grafana does not know
(JSON strings keep their literal type in a literal). Plugin options and custom field
config are checked as deep partials: Grafana fills every option a dashboard leaves out
from the plugin's defaults, so only what is written must be right.

ALLOWED lists the errors that are known false positives, each with its reason."""

from __future__ import annotations

import copy
import json
import re
import subprocess
from pathlib import Path

import pytest

from grafana import dashboards
from paths import REPO

PACKAGES = REPO / "tests" / "grafana-schema"
MODULES = PACKAGES / "node_modules"
TSC = MODULES / "typescript" / "bin" / "tsc"
RELEASES = ("10", "11", "12", "13")  # grafana-schema-<major> in package.json
# panel plugin -> its custom field config type (the stat panel has none)
PLUGINS = {"timeseries": "{}.FieldConfig", "stat": "Record<string, never>",
           "table": "{}.FieldConfig"}

# (release, error code, text in the message, why it is not a fault of the dashboard)
ALLOWED: tuple[tuple[str, str, str, str], ...] = tuple(
    (release, "TS2739", "is missing the following properties from type '{ " + fields
     + "selected?: boolean | undefined; text: string | string[]; value: string | "
     "string[]; }': text, value",
     "`current: {}` on a template variable: no value chosen yet. The generated type makes "
     "text and value required because the CUE schema has no default for them, but Grafana "
     "itself writes `current: {}` when it exports a dashboard whose variable has no "
     "selection, and picks the default (All) on load.")
    for release, fields in (("10", ""), ("11", ""), ("12", "properties?: { [x: string]: "
                            "string; } | undefined; "), ("13", "properties?: { [x: string]: "
                            "string; } | undefined; ")))

PRELUDE = """\
import type {{ Dashboard, Panel, RowPanel, FieldConfigSource, FieldConfig }} from '@grafana/schema';
{imports}
// JSON holds an enum's value, not the TypeScript enum: "table" for LegendDisplayMode.Table.
// Numeric enums stay: TypeScript accepts only their members' values.
type Json<T> = T extends string ? `${{T}}` : T extends Array<infer U> ? Array<Json<U>>
  : T extends object ? {{ [K in keyof T]: Json<T[K]> }} : T;
// What a dashboard may leave out of a plugin's options: Grafana fills it from the defaults.
type DeepPartial<T> = T extends Array<infer U> ? Array<DeepPartial<U>>
  : T extends object ? {{ [K in keyof T]?: DeepPartial<T[K]> }} : T;
type PluginPanel<O, F> = Json<Omit<Panel, 'options' | 'fieldConfig'> & {{
  options?: DeepPartial<O>;
  fieldConfig?: Omit<FieldConfigSource, 'defaults'> & {{
    defaults: Omit<FieldConfig, 'custom'> & {{ custom?: DeepPartial<F> }};
  }};
}}>;
"""


def release_dir(release: str) -> Path:
    return MODULES / f"grafana-schema-{release}"


def index_types(release: str) -> Path:
    """The package's entry type declarations (their place moved between releases)."""
    root = release_dir(release) / "dist"
    for candidate in ("types/index.d.ts", "index.d.ts", "esm/index.d.ts", "esm/index.d.mts"):
        if (root / candidate).is_file():
            return root / candidate
    raise AssertionError(f"no index types in {root}")


def plugin_types(release: str, plugin: str) -> Path:
    found = sorted(release_dir(release).glob(f"dist/**/raw/composable/{plugin}/panelcfg/x/*.d.ts"),
                   key=lambda p: ("/dist/types/" not in str(p), str(p)))
    assert found, f"{release}: no panel config types for {plugin}"
    return found[0]


def module_path(path: Path) -> str:
    return re.sub(r"\.d\.(m|c)?ts$", "", str(path))


def typescript(dash: dict, release: str) -> tuple[str, dict[int, str]]:
    """The module for one dashboard, and which panel starts on which line."""
    imports = "\n".join(f"import type * as {p} from '{module_path(plugin_types(release, p))}';"
                        for p in PLUGINS)
    lines = PRELUDE.format(imports=imports).splitlines()
    body = {k: v for k, v in dash.items() if k != "panels"}
    lines += ["export const dashboard: Json<Dashboard> = {"]
    lines += [f"  {json.dumps(k)}: {json.dumps(v)}," for k, v in body.items()]
    lines.append('  "panels": [')
    starts = {}
    for panel in dash.get("panels", []):
        kind = panel.get("type")
        target = ("Json<RowPanel>" if kind == "row" else
                  f"PluginPanel<{kind}.Options, {PLUGINS[kind].format(kind)}>" if kind in PLUGINS
                  else "Json<Panel>")
        starts[len(lines) + 1] = f"panel {panel.get('title')!r} ({kind})"
        lines += f"    ({json.dumps(panel, indent=1)}) satisfies {target},".splitlines()
    lines += ["  ],", "};", ""]
    return "\n".join(lines), starts


def where(line: int, starts: dict[int, str]) -> str:
    before = [n for n in starts if n <= line]
    return starts[max(before)] if before else "dashboard"


def check(tmp_path: Path, dashes: dict[str, dict]) -> list[str]:
    """tsc's errors, one line each (file, panel, code, message), minus ALLOWED."""
    errors = []
    for release in RELEASES:
        work = tmp_path / f"grafana-{release}"
        work.mkdir()
        starts = {}
        for name, dash in dashes.items():
            text, starts[name] = typescript(dash, release)
            (work / f"{name}.ts").write_text(text)
        (work / "tsconfig.json").write_text(json.dumps({
            "compilerOptions": {
                "strict": True, "noEmit": True, "target": "es2022", "module": "esnext",
                "moduleResolution": "bundler", "skipLibCheck": True, "types": [],
                "paths": {"@grafana/schema": [module_path(index_types(release))]}},
            "files": [f"{name}.ts" for name in dashes]}))
        r = subprocess.run(["node", str(TSC), "-p", ".", "--pretty", "false"], cwd=work,
                           capture_output=True, text=True, check=False, timeout=300)
        assert r.returncode in (0, 2), r.stdout + r.stderr  # 2: errors reported
        found = list(re.finditer(r"^(\S+)\.ts\((\d+),\d+\): error (TS\d+): (.*(?:\n .*)*)",
                                 r.stdout, re.MULTILINE))
        if r.returncode and not found:  # an error the pattern does not read
            raise AssertionError(r.stdout)
        for m in found:
            name, line, code, message = m[1], int(m[2]), m[3], " ".join(m[4].split())
            if any(release == a and code == c and text in message for a, c, text, _ in ALLOWED):
                continue
            errors.append(f"grafana {release}: {name}: {where(line, starts[name])}: {code}: "
                          f"{message}")
    return errors


def test_packages_are_installed() -> None:
    assert TSC.is_file(), "run scripts/test (npm ci in tests/grafana-schema)"
    for release in RELEASES:
        version = json.loads((release_dir(release) / "package.json").read_text())["version"]
        assert version.startswith(f"{release}."), version


BROKEN = "broken-nicwatch-fleet"


@pytest.fixture(scope="module")
def errors(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """One tsc run per release over every dashboard plus a broken copy of the fleet one."""
    dashes = {path.stem: json.loads(path.read_text())
              for path in sorted((REPO / "grafana").glob("*.json"))}
    assert len(dashes) == len(dashboards.DASHBOARDS) == 2
    dashes[BROKEN] = broken(dashes["nicwatch-fleet"])
    return check(tmp_path_factory.mktemp("tsc"), dashes)


def test_dashboards_match_grafana_schema(errors: list[str]) -> None:
    assert [e for e in errors if f": {BROKEN}: " not in e] == []


def broken(dash: dict) -> dict:
    """One of each kind of mistake the schema must catch."""
    dash = copy.deepcopy(dash)
    dash["graphTooltip"] = 7  # DashboardCursorSync is 0, 1 or 2
    panels = {p["type"]: p for p in dash["panels"]}
    panels["row"]["colapsed"] = False  # misspelt key on a row
    ts = panels["timeseries"]
    ts["gridPos"]["width"] = ts["gridPos"].pop("w")  # misspelt grid key
    ts["options"]["legend"]["displayMode"] = "tabel"  # not a LegendDisplayMode
    ts["fieldConfig"]["defaults"]["custom"] = {"lineWidht": 1}  # unknown custom field config
    panels["stat"]["options"]["colorMode"] = 3  # a string enum, not a number
    return dash


def test_schema_check_fails_on_a_broken_dashboard(errors: list[str]) -> None:
    fleet = json.loads((REPO / "grafana" / "nicwatch-fleet.json").read_text())
    panels = {p["type"]: f"panel {p['title']!r} ({p['type']})" for p in fleet["panels"]}
    expected = [  # where, what
        ("dashboard", "Type '7' is not assignable to type 'DashboardCursorSync"),
        (panels["row"], "'\"colapsed\"' does not exist"),
        (panels["timeseries"], "'\"width\"' does not exist"),
        (panels["timeseries"], "Type '\"tabel\"' is not assignable"),
        (panels["timeseries"], "'\"lineWidht\"' does not exist"),
        (panels["stat"], "Type 'number' is not assignable to type '\"value\" | \"background\""),
    ]
    for release in RELEASES:
        mine = [e for e in errors if e.startswith(f"grafana {release}: {BROKEN}: ")]
        for at, text in expected:
            assert any(f": {at}: " in e and text in e for e in mine), \
                f"grafana {release} missed {text} at {at}:\n" + "\n".join(mine)
        unexpected = [e for e in mine if not any(f": {at}: " in e and text in e
                                                 for at, text in expected)]
        assert unexpected == []  # and nothing else
