"""`nicwatch deploy`: print or write the deployment files shipped with nicwatch.

A pip or pipx install carries the systemd units, the Prometheus rules, the Grafana
dashboards, the Kubernetes manifests and the example configuration files, so one command
sets a host up without the git tree:

    nicwatch deploy systemd nicwatch.service > /etc/systemd/system/nicwatch.service
    nicwatch deploy config nicwatch.toml --output /etc/nicwatch
    nicwatch deploy rules > /etc/prometheus/rules/nicwatch.yml
    nicwatch deploy kubernetes | kubectl apply -f -
    nicwatch deploy config thresholds.toml > thresholds.toml   # edit, then:
    nicwatch deploy rules --thresholds thresholds.toml > /etc/prometheus/rules/nicwatch.yml
    nicwatch deploy docs alerts.md | less        # a docs/*.md file a message names

The files are the repository's own: the build copies them into the package (setup.py
reads DEPLOY_FILES below), and a source checkout (an editable install) serves them from
the tree, so there is one copy of each. With ``--output DIR`` every file of the kind is
written atomically into DIR (created if missing, subdirectories kept); without it a kind
with one file, or the one file named, goes to stdout (Kubernetes: every manifest as one
multi-document stream, in the order of kustomization.yaml), and a kind with several files
prints each under a ``==> NAME <==`` header (as head(1) does) and says on stderr how to
write them. The systemd units run the nicwatch that runs `deploy` (its console script, else
``python -m nicwatch``), not the ``/usr/bin/nicwatch`` pip never installs.

``rules --thresholds FILE`` writes the rules from a thresholds file of the user's, with the
repository's own generator (deploy/prometheus/generate.py, shipped as GENERATOR), so the
committed rules and a user's come from one place. The ``docs`` kind is every docs/**/*.md
(setup.py copies them): what the help texts and messages name as docs/NAME.md.

A file that raises the daemon's privileges (the systemd drop-in granting CAP_NET_ADMIN) is
never part of a kind's set: it is written or printed only when named. ``--output`` leaves
a file that already holds the same bytes alone and refuses, before writing anything, to
replace one that differs (an edited ``nicwatch.toml``) unless ``--force`` is given.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import sysconfig
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

import yaml

import nicwatch
from nicwatch.cli import common
from nicwatch.cli.common import EXIT_FAILURE, EXIT_USAGE
from nicwatch.snapshot.atomicfile import (
    SHARED_DIR_MODE,
    SHARED_FILE_MODE,
    AtomicWriteError,
    make_dirs,
    write_atomic,
)

# kind -> {name it is printed or written as: path in the repository}. The build copies
# every path into the package under nicwatch/share/ (setup.py parses this assignment), so
# it must stay a plain literal.
DEPLOY_FILES: dict[str, dict[str, str]] = {
    "systemd": {
        "nicwatch.service": "systemd/nicwatch.service",
        "nicwatch.socket": "systemd/nicwatch.socket",
        "nicwatch.service.d/socket-activation.conf":
            "systemd/nicwatch.service.d/socket-activation.conf",
        "nicwatch.service.d/module-collector.conf":
            "systemd/nicwatch.service.d/module-collector.conf",
    },
    "rules": {"nicwatch-rules.yml": "deploy/prometheus/nicwatch-rules.yml"},
    "dashboards": {
        "nicwatch-fleet.json": "grafana/nicwatch-fleet.json",
        "nicwatch-host.json": "grafana/nicwatch-host.json",
    },
    "kubernetes": {
        "kustomization.yaml": "deploy/kubernetes/kustomization.yaml",
        "namespace.yaml": "deploy/kubernetes/namespace.yaml",
        "configmap.yaml": "deploy/kubernetes/configmap.yaml",
        "daemonset.yaml": "deploy/kubernetes/daemonset.yaml",
        "service.yaml": "deploy/kubernetes/service.yaml",
        "servicemonitor.yaml": "deploy/kubernetes/servicemonitor.yaml",
        "prometheusrule.yaml": "deploy/kubernetes/prometheusrule.yaml",
    },
    "config": {
        "nicwatch.toml": "deploy/nicwatch.toml",
        "roce-fabric.toml": "deploy/roce-fabric.toml",
        "prometheus.yml": "deploy/prometheus/prometheus.yml",
        "thresholds.toml": "deploy/prometheus/thresholds.toml",
        "alertmanager.yml": "deploy/alertmanager/alertmanager.yml",
    },
}
# Shipped too (setup.py copies it) but printed by no kind: the rule generator that
# `deploy rules --thresholds FILE` runs. A plain literal, like DEPLOY_FILES.
GENERATOR = "deploy/prometheus/generate.py"
DOCS = "docs"  # the docs kind: every DOCS/*.md, listed from the shipped directory
# (kind, name) of the files that raise the daemon's privileges: only when named, and why.
PRIVILEGED: dict[tuple[str, str], str] = {
    ("systemd", "nicwatch.service.d/module-collector.conf"):
        "grants CAP_NET_ADMIN and PrivateUsers=no for --collector.module (systemd-analyze "
        "security: 1.3 -> 1.7)",
}
KINDS = {
    "systemd": "the service unit, the socket unit, the drop-in that pairs them and the "
               "drop-in granting CAP_NET_ADMIN for --collector.module",
    "rules": "Prometheus alert and recording rules",
    "dashboards": "Grafana dashboards: fleet overview and host drill-down",
    "kubernetes": "DaemonSet, Service, ServiceMonitor, PrometheusRule, ConfigMap, Namespace",
    "config": "nicwatch.toml (every key), roce-fabric.toml (expectations), an example "
              "Prometheus scrape configuration, thresholds.toml (the rules' thresholds, for "
              "rules --thresholds), an Alertmanager route and inhibit rules",
    "docs": "the documentation (docs/NAME.md in help texts and messages)",
}
PACKAGE_DIR = "share"  # nicwatch/share/... in a built package
# The shipped units run this (where a distribution package installs nicwatch); deploy writes
# the nicwatch that runs it instead (running_command), which pip and pipx never put there.
UNIT_COMMAND = "/usr/bin/nicwatch"
# nicwatch.service mounts these empty or private for the service (ProtectHome=yes,
# PrivateTmp=yes): a nicwatch installed under them cannot start there.
HIDDEN_FROM_UNIT = ("/home", "/root", "/run/user", "/tmp", "/var/tmp")


class DeployError(Exception):
    """A deploy request that cannot be served; the message is the one line to print."""

    def __init__(self, message: str, status: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.status = status


def source_root() -> Traversable:
    """Where the files are: the package's share/ directory when built, else the source tree
    this nicwatch runs from (an editable install)."""
    packaged = resources.files(nicwatch) / PACKAGE_DIR
    if packaged.is_dir():
        return packaged
    tree = Path(nicwatch.__file__).resolve().parent.parent.parent  # src/nicwatch -> repo
    if (tree / "pyproject.toml").is_file() and (tree / "systemd").is_dir():
        return tree
    raise DeployError("deploy: this nicwatch was installed without its deployment files "
                      "(reinstall from a wheel or the source tree)", EXIT_FAILURE)


def files_of(kind: str) -> dict[str, str]:
    """name -> repository path of the kind's files."""
    if kind != DOCS:
        return DEPLOY_FILES[kind]
    return {name: f"{DOCS}/{name}" for name in sorted(_markdown(source_root() / DOCS))}


def _markdown(folder: Traversable, prefix: str = "") -> list[str]:
    """Every .md under ``folder``, as paths relative to it (``howto/kubernetes.md``): the
    pages link into their subfolders, so those ship too."""
    if not folder.is_dir():
        return []
    found: list[str] = []
    for entry in folder.iterdir():
        if entry.is_dir():
            found += _markdown(entry, f"{prefix}{entry.name}/")
        elif entry.name.endswith(".md"):
            found.append(prefix + entry.name)
    return found


def read(kind: str, name: str) -> bytes:
    path = source_root().joinpath(*files_of(kind)[name].split("/"))
    try:
        data: bytes = path.read_bytes()
        return data
    except OSError as e:
        raise DeployError(f"deploy {kind}: {name}: cannot read: {e.strerror or e}",
                          EXIT_FAILURE) from None


def _unit_quoted(word: str) -> str:
    """One word of an ExecStart= line (systemd.service: "Command lines")."""
    if word and not any(c in word for c in ' \t"\'\\;$%'):
        return word
    return '"' + word.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%") \
        .replace("$", "$$") + '"'


def running_command() -> tuple[str, str]:
    """The nicwatch that runs this command, as an ExecStart= line starts it, and the file
    it runs: the console script of this installation (its scheme's scripts directory, else
    beside the interpreter), else this interpreter with ``-m nicwatch``."""
    for folder in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        script = os.path.join(os.path.abspath(folder), "nicwatch") if folder else ""
        if script and os.path.isfile(script) and os.access(script, os.X_OK):
            return _unit_quoted(script), script
    python = os.path.abspath(sys.executable)
    return f"{_unit_quoted(python)} -m nicwatch", python


def content(kind: str, name: str) -> bytes:
    """A shipped file as deploy prints or writes it: a systemd unit's ExecStart= runs the
    nicwatch that runs this command (running_command), not UNIT_COMMAND."""
    data = read(kind, name)
    if kind == "systemd":
        command, _ = running_command()
        data = data.replace(f"ExecStart={UNIT_COMMAND} ".encode(),
                            f"ExecStart={command} ".encode())
    return data


def unit_notes(kind: str) -> list[str]:
    """A line for stderr when the units deploy writes cannot run their nicwatch: one
    installed where the unit hides the file system (HIDDEN_FROM_UNIT)."""
    if kind != "systemd":
        return []
    command, path = running_command()
    hidden = next((h for h in HIDDEN_FROM_UNIT if Path(path).is_relative_to(h)), None)
    if hidden is None:
        return []
    return [f"note: the units run {command}, under {hidden}, which nicwatch.service hides "
            "from the service (ProtectHome=yes, PrivateTmp=yes): install nicwatch elsewhere "
            "(a virtual environment in /opt/nicwatch) or see docs/deploy.md"]


def select(kind: str, names: list[str]) -> tuple[str, ...]:
    """The files named, in the kind's order; without names, the kind's files but those
    that raise privileges (PRIVILEGED: only when named)."""
    files = tuple(files_of(kind))
    unknown = [n for n in names if n not in files]
    if unknown:
        raise DeployError(f"deploy {kind}: no file {unknown[0]!r} (files: {', '.join(files)})")
    if names:
        return tuple(n for n in files if n in names)
    return tuple(n for n in files if (kind, n) not in PRIVILEGED)


def left_out(kind: str, names: tuple[str, ...]) -> list[str]:
    """One line per privilege-raising file of ``kind`` not among ``names``."""
    return [f"not written: {name} {why}; name it to write it"
            for (k, name), why in PRIVILEGED.items() if k == kind and name not in names]


def kubernetes_stream() -> bytes:
    """Every manifest of kustomization.yaml's resources as one multi-document YAML stream
    (what `kubectl apply -k` applies: the kustomization only lists resources)."""
    resources_ = yaml.safe_load(read("kubernetes", "kustomization.yaml"))["resources"]
    parts = []
    for name in resources_:
        text = read("kubernetes", name)
        parts.append(b"---\n" + text + (b"" if text.endswith(b"\n") else b"\n"))
    return b"".join(parts)


def _state(path: Path, data: bytes) -> str:
    """``absent``, ``same`` (holds ``data``) or ``differs`` (other bytes, or a symlink:
    replacing it would not write where it points), read without following a symlink."""
    try:
        if path.is_symlink():
            return "differs"
        if not path.exists():
            return "absent"
        if not path.is_file():
            raise DeployError(f"deploy: {path}: not a regular file; not replaced")
        return "same" if path.read_bytes() == data else "differs"
    except OSError as e:
        raise DeployError(f"deploy: {path}: {e.strerror or e}", EXIT_FAILURE) from None


def generated_rules(thresholds: Path) -> bytes:
    """The rules file for a thresholds file, by the shipped generator; a bad file is the
    generator's one line (exit 2)."""
    with resources.as_file(source_root().joinpath(*GENERATOR.split("/"))) as script:
        spec = importlib.util.spec_from_file_location("nicwatch_rules_generator", script)
        if spec is None or spec.loader is None or not script.is_file():
            raise DeployError(f"deploy rules: {GENERATOR}: not shipped with this nicwatch",
                              EXIT_FAILURE)
        generator = sys.modules.get(spec.name)
        if generator is None:  # its dataclasses look their module up in sys.modules
            generator = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(generator)
    try:
        settings = generator.load_settings(thresholds)
    except generator.ThresholdError as e:
        raise DeployError(f"deploy rules --thresholds: {e}") from None
    text: str = generator.rules_yaml(settings, str(thresholds))
    return text.encode()


def write(kind: str, names: tuple[str, ...], output: Path, force: bool = False,
          contents: dict[str, bytes] | None = None) -> list[tuple[str, Path]]:
    """Write the files into ``output`` (``contents`` instead of the shipped files when
    given); (``wrote`` or ``unchanged``, path) per file. A file that differs from what
    would be written is replaced only with ``force``; without it nothing is written and
    the first such file is named (exit status 1)."""
    if contents is None:  # read all before writing any
        contents = {name: content(kind, name) for name in names}
    try:
        if output.exists() and not output.is_dir():
            raise DeployError(f"deploy: --output {output}: not a directory")
    except OSError as e:
        raise DeployError(f"deploy: {output}: {e.strerror or e}", EXIT_FAILURE) from None
    paths = {name: output.joinpath(*name.split("/")) for name in contents}
    state = {name: _state(paths[name], data) for name, data in contents.items()}
    differs = [paths[n] for n, st in state.items() if st == "differs"]
    if differs and not force:
        more = f" (and {len(differs) - 1} more)" if len(differs) > 1 else ""
        raise DeployError(f"deploy: {differs[0]}{more} differs from the file nicwatch ships; "
                          "nothing written (--force replaces it)", EXIT_FAILURE)
    written: list[tuple[str, Path]] = []
    for name, data in contents.items():
        path = paths[name]
        if state[name] == "same":
            written.append(("unchanged", path))
            continue
        try:
            make_dirs(path.parent, SHARED_DIR_MODE)
        except OSError as e:
            raise DeployError(f"deploy: {path.parent}: cannot create: {e.strerror or e}",
                              EXIT_FAILURE) from None
        try:
            write_atomic(path, data, mode=SHARED_FILE_MODE)
        except AtomicWriteError as e:
            raise DeployError(f"deploy: {e}", EXIT_FAILURE) from None
        except OSError as e:
            raise DeployError(f"deploy: {path}: {e.strerror or e}", EXIT_FAILURE) from None
        written.append(("wrote", path))
    return written


def listing() -> str:
    lines = []
    for kind in KINDS:
        files = files_of(kind)
        lines.append(f"{kind}: {KINDS[kind]}")
        lines.extend(f"  {name}" + (f"  (only when named: {PRIVILEGED[kind, name]})"
                                    if (kind, name) in PRIVILEGED else "")
                     for name in files)
    return "\n".join(lines)


def add_parser(subparsers: common.Subparsers) -> argparse.ArgumentParser:
    p = common.add_command(
        subparsers, "deploy",
        description=__doc__.splitlines()[0],
        epilog="kinds: " + "; ".join(f"{k}: {v}" for k, v in KINDS.items()))
    p.add_argument("kind", nargs="?", choices=tuple(KINDS), metavar="KIND",
                   help="systemd, rules, dashboards, kubernetes, config or docs")
    p.add_argument("files", nargs="*", metavar="FILE",
                   help="only these files of the kind (see --list)")
    p.add_argument("-o", "--output", metavar="DIR", type=Path,
                   help="write the files into DIR (atomically) instead of printing them; "
                        "a file there that differs is left alone unless --force")
    p.add_argument("--force", action="store_true",
                   help="with --output: replace files that differ from the shipped ones")
    p.add_argument("--list", action="store_true", help="list the kinds and their files")
    p.add_argument("--thresholds", metavar="FILE", type=Path,
                   help="with rules: generate the rules from this thresholds file (start from "
                        "`nicwatch deploy config thresholds.toml`)")
    return p


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except DeployError as e:
        print(f"nicwatch: error: {e}", file=sys.stderr)
        return e.status


def _run(args: argparse.Namespace) -> int:
    if args.list:
        if args.kind or args.files or args.output or args.force or args.thresholds:
            raise DeployError("deploy: --list takes no kind, file, --output, --force or "
                              "--thresholds")
        print(listing())
        return 0
    if args.kind is None:
        raise DeployError(f"deploy: name a kind ({', '.join(KINDS)}); --list shows "
                          "the files")
    names = select(args.kind, args.files)
    if args.force and args.output is None:
        raise DeployError("deploy: --force only goes with --output DIR")
    contents = None
    if args.thresholds is not None:
        if args.kind != "rules":
            raise DeployError(f"deploy: --thresholds only goes with rules, not {args.kind}")
        contents = {name: generated_rules(args.thresholds) for name in names}
    if args.output is not None:
        for what, path in write(args.kind, names, args.output, args.force, contents):
            print(f"{what} {path}")
        for line in (*left_out(args.kind, names), *unit_notes(args.kind)):
            print(line, file=sys.stderr)
        return 0
    if args.kind == "kubernetes" and not args.files:
        data = kubernetes_stream()
    elif contents is not None and len(names) == 1:
        data = contents[names[0]]
    elif len(names) == 1:
        data = content(args.kind, names[0])
    else:  # each under a header, as head(1) prints several files; how to install them
        data = b"\n".join(f"==> {name} <==\n".encode() + _ended(content(args.kind, name))
                          for name in names)
    sys.stdout.buffer.write(data)
    sys.stdout.flush()
    if len(names) > 1 and args.kind != "kubernetes":
        print(f"nicwatch: {len(names)} files printed, each under a ==> NAME <== header; "
              f"`nicwatch deploy {args.kind} --output DIR` writes them, `nicwatch deploy "
              f"{args.kind} {names[0]}` prints one alone", file=sys.stderr)
    for line in (*(left_out(args.kind, names) if not args.files else ()),
                 *unit_notes(args.kind)):
        print(line, file=sys.stderr)
    return 0


def _ended(data: bytes) -> bytes:
    return data if data.endswith(b"\n") or not data else data + b"\n"
