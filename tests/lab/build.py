"""Build the lab guest from Debian packages: a kernel, its netdevsim module, a busybox
userspace with the kernel's own tools and Python, and nicwatch's Python environment.

Everything comes from the package registries through their ordinary clients: ``apt-get
download`` and ``dpkg-deb -x`` for Debian packages (nothing is installed on the host), ``pip
download`` for the wheels of nicwatch's dependencies. The result is cached outside the
repository, keyed by the kernel release and a hash of this recipe::

    $NICWATCH_LAB_CACHE (default ~/.cache/nicwatch-lab)/
        debs/                 downloaded .deb files (reused across kernels)
        wheels/               downloaded wheels
        guests/<release>-<recipe>/
            vmlinux           the uncompressed kernel (QEMU boots its PVH entry)
            base.cpio         the guest's userspace (newc, uncompressed: nothing to inflate
                              under software emulation)
            guest.json        what went in: kernel, package versions, build times

The kernel is ``$NICWATCH_LAB_KERNEL``: a Debian package name (the default
``linux-image-6.12-amd64`` is a meta package, resolved to the newest concrete image it
depends on; ``linux-image-amd64`` is bookworm's 6.1) or a concrete release such as
``6.12.117+deb12-amd64``. netdevsim, which Debian does not build, is compiled out of tree
from the ``linux-source`` package of the same version with that release's headers.

nicwatch itself and the scenario scripts are not in the cached image: each boot appends a
small cpio of the working tree's ``src/nicwatch`` and ``tests/lab/guest``
(:func:`qemu.overlay`), so a change to nicwatch never rebuilds the guest.

Run ``python3 tests/lab/build.py`` to build (or find) the guest and print its directory.
"""

from __future__ import annotations

import hashlib
import json
import lzma
import os
import re
import shutil
import stat
import struct
import subprocess
import sys
import tempfile
import time
import tomllib
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
GUEST_FILES = HERE / "guest"

DEFAULT_KERNEL = "linux-image-6.12-amd64"
ENV_KERNEL = "NICWATCH_LAB_KERNEL"
ENV_CACHE = "NICWATCH_LAB_CACHE"

# Userspace of the guest, with their Depends closure: the kernel's own tools are the
# reference every scenario compares nicwatch with.
GUEST_PACKAGES = (
    "busybox-static",      # sh and the small tools
    "kmod",                # modprobe: the kernel calls /sbin/modprobe (rxe needs crc32)
    "libc-bin",            # ldconfig: ctypes.util.find_library (pyudev's libudev) asks it
    "iproute2",            # ip, devlink, rdma
    "ethtool",
    "ibverbs-utils",       # ibv_rc_pingpong, ibv_devinfo
    "ibverbs-providers",   # librxe
    "perftest",            # ib_write_bw
    "python3.11-minimal",  # nicwatch runs on Debian's interpreter
    "libpython3.11-stdlib",
    "libstdc++6",          # google-re2's extension (every user regex) links libstdc++.so.6
)
# Dependencies only maintainer scripts use (the guest never runs dpkg).
NOT_NEEDED = frozenset({
    "debconf", "debconf-2.0", "perl-base", "dpkg", "init-system-helpers", "adduser",
    "lsb-base", "sensible-utils", "libcap2-bin", "tzdata", "readline-common",
    "media-types", "mime-support", "netbase",
})
# Kernel modules the scenarios load (with their `depends` closure). crc32_generic: rxe asks
# the crypto API for "crc32", which the kernel loads through modprobe.
GUEST_MODULES = ("e1000e", "virtio_pci", "virtio_net", "bonding", "8021q", "rdma_rxe",
                 "ib_uverbs", "rdma_ucm", "crc32_generic", "psample")
# Paths of the unpacked packages the guest does not need.
SKIP_PREFIXES = ("usr/share/doc/", "usr/share/man/", "usr/share/locale/", "usr/share/info/",
                 "usr/share/lintian/", "usr/share/bug/", "usr/share/bash-completion/",
                 "usr/lib/python3.11/ensurepip/", "usr/lib/python3.11/idlelib/",
                 "usr/lib/python3.11/lib2to3/", "usr/lib/python3.11/pydoc_data/",
                 "usr/lib/python3.11/turtledemo/", "usr/lib/python3.11/test/",
                 "usr/lib/python3.11/unittest/test/", "usr/lib/x86_64-linux-gnu/gconv/",
                 "usr/lib/python3.11/config-3.11-x86_64-linux-gnu/", "usr/include/")
# usr-merged layout of the guest: top-level directories of a package map into /usr.
USR_MERGE = {"bin": "usr/bin", "sbin": "usr/sbin", "lib": "usr/lib", "lib64": "usr/lib64"}


class LabUnavailable(Exception):
    """What the lab needs cannot be had here (no QEMU, no registry, a package missing): the
    lab tests are skipped with this reason."""


def cache_dir() -> Path:
    return Path(os.environ.get(ENV_CACHE) or "~/.cache/nicwatch-lab").expanduser()


def kernel_spec() -> str:
    return os.environ.get(ENV_KERNEL) or DEFAULT_KERNEL


def log(message: str) -> None:
    print(f"nicwatch-lab: {message}", file=sys.stderr, flush=True)


def run(argv: Sequence[str | os.PathLike[str]], **kwargs: object
        ) -> subprocess.CompletedProcess[str]:
    """A command whose failure is a build failure, with its output in the message."""
    result = subprocess.run([os.fspath(a) for a in argv], text=True, capture_output=True,
                            **kwargs)  # type: ignore[call-overload]
    if result.returncode != 0:
        tail = (result.stdout + result.stderr).strip().splitlines()[-25:]
        raise RuntimeError(f"{' '.join(map(str, argv[:4]))} ... exited {result.returncode}:\n"
                           + "\n".join(tail))
    return result


# --- the registry --------------------------------------------------------------------------


@dataclass(frozen=True)
class Package:
    name: str
    version: str
    arch: str
    size: int
    depends: tuple[tuple[str, ...], ...]  # each: the alternatives, by name

    @property
    def filename(self) -> str:  # as apt-get download names it
        return f"{self.name}_{self.version.replace(':', '%3a')}_{self.arch}.deb"


def _parse_depends(text: str) -> tuple[tuple[str, ...], ...]:
    out = []
    for group in filter(None, (g.strip() for g in text.split(","))):
        names = tuple(re.split(r"[\s(:]", alt.strip(), maxsplit=1)[0] for alt in group.split("|"))
        out.append(names)
    return tuple(out)


def apt_show(names: Iterable[str]) -> dict[str, Package]:
    """The candidate version of each name that is a real package (virtual ones are absent),
    from one ``apt-cache show --no-all-versions`` call."""
    names = sorted(set(names))
    if not names:
        return {}
    result = subprocess.run(["apt-cache", "show", "--no-all-versions", *names], text=True,
                            capture_output=True)
    if result.returncode not in (0, 100):
        raise LabUnavailable(f"apt-cache show failed: {result.stderr.strip()[:200]}")
    packages: dict[str, Package] = {}
    for block in result.stdout.split("\n\n"):
        fields: dict[str, str] = {}
        key = ""
        for line in block.splitlines():
            if line.startswith(" ") and key:
                fields[key] += " " + line.strip()
            elif ":" in line:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
        if "Package" not in fields:
            continue
        depends = ", ".join(filter(None, (fields.get("Pre-Depends"), fields.get("Depends"))))
        packages[fields["Package"]] = Package(
            fields["Package"], fields["Version"], fields.get("Architecture", "amd64"),
            int(fields.get("Size", "0")), _parse_depends(depends))
    return packages


def apt_version(name: str, version: str) -> Package:
    """One package at an exact version (``apt-cache show name=version``)."""
    result = subprocess.run(["apt-cache", "show", f"{name}={version}"], text=True,
                            capture_output=True)
    if result.returncode != 0:
        raise LabUnavailable(f"{name} {version} is not in the package lists")
    block = result.stdout.split("\n\n")[0]
    size = re.search(r"^Size: (\d+)", block, re.M)
    arch = re.search(r"^Architecture: (\S+)", block, re.M)
    return Package(name, version, arch.group(1) if arch else "all",
                   int(size.group(1)) if size else 0, ())


def closure(roots: Iterable[str]) -> dict[str, Package]:
    """``roots`` and everything they depend on (in each group of alternatives, the first
    that is a real package), leaving out NOT_NEEDED."""
    roots = tuple(roots)
    chosen = apt_show(roots)
    missing = sorted(set(roots) - set(chosen))
    if missing:
        raise LabUnavailable(f"not in the package lists: {', '.join(missing)}")
    frontier = list(chosen.values())
    while frontier:
        groups = [g for p in frontier for g in p.depends
                  if not any(a in NOT_NEEDED or a in chosen for a in g)]
        known = apt_show({a for g in groups for a in g})
        new: dict[str, Package] = {}
        for group in groups:
            if any(a in chosen or a in new for a in group):
                continue
            pick = next((a for a in group if a in known), None)
            if pick is None:
                raise LabUnavailable(f"no package in the lists satisfies {' | '.join(group)}")
            new[pick] = known[pick]
        chosen.update(new)
        frontier = list(new.values())
    return chosen


def download(packages: Iterable[Package], debs: Path) -> list[Path]:
    """The .deb of each package in ``debs``, fetched with ``apt-get download`` when absent."""
    debs.mkdir(parents=True, exist_ok=True)
    packages = list(packages)
    todo = [p for p in packages
            if not (debs / p.filename).is_file()
            or (p.size and (debs / p.filename).stat().st_size != p.size)]
    if todo:
        log(f"downloading {len(todo)} packages ({sum(p.size for p in todo) / 1e6:.0f} MB)")
        result = subprocess.run(
            ["apt-get", "download", "-q", *(f"{p.name}={p.version}" for p in todo)],
            cwd=debs, text=True, capture_output=True)
        if result.returncode != 0:
            raise LabUnavailable("apt-get download failed: "
                                 + (result.stderr.strip().splitlines() or ["?"])[-1][:300])
    paths = [debs / p.filename for p in packages]
    absent = [p.name for p in paths if not p.is_file()]
    if absent:
        raise LabUnavailable(f"apt-get download left out {', '.join(absent)}")
    return paths


@dataclass(frozen=True)
class Kernel:
    """One Debian kernel and the packages that build a module for it."""

    release: str  # uname -r: 6.12.117+deb12-amd64
    version: str  # the Debian version: 6.12.117-1~deb12u1
    image: Package
    headers: Package
    headers_common: Package
    kbuild: Package
    source: Package

    @property
    def packages(self) -> tuple[Package, ...]:
        return (self.image, self.headers, self.headers_common, self.kbuild, self.source)


_CONCRETE = re.compile(r"linux-image-(\d+\.\d+\.\d+[^\s]*-amd64|\d+\.\d+\.0-\d+-amd64)")


def resolve_kernel(spec: str) -> Kernel:
    """A package name (a meta package is followed to the concrete image it depends on) or
    a release (``6.12.117+deb12-amd64``) -> the kernel's packages at one version."""
    name = spec if spec.startswith("linux-image-") else f"linux-image-{spec}"
    for _ in range(4):
        shown = apt_show([name]).get(name)
        if shown is None:
            raise LabUnavailable(f"{name} is not in the package lists (run apt-get update, "
                                 f"or set {ENV_KERNEL})")
        if _CONCRETE.fullmatch(name):
            break
        images = [alt[0] for alt in shown.depends if alt[0].startswith("linux-image-")]
        if len(images) != 1:
            raise LabUnavailable(f"{name} depends on no single kernel image: {images}")
        name = images[0]
    else:
        raise LabUnavailable(f"{spec}: no concrete kernel image found")
    image = shown
    release = name.removeprefix("linux-image-")
    headers = apt_show([f"linux-headers-{release}"]).get(f"linux-headers-{release}")
    if headers is None:
        raise LabUnavailable(f"linux-headers-{release} is not in the package lists")
    common = next((a[0] for a in headers.depends if a[0].startswith("linux-headers-")), None)
    kbuild = next((a[0] for a in headers.depends if a[0].startswith("linux-kbuild-")), None)
    if common is None or kbuild is None:
        raise LabUnavailable(f"linux-headers-{release} names no common headers or kbuild")
    major_minor = ".".join(image.version.split(".")[:2])
    return Kernel(release, image.version, image, apt_version(headers.name, image.version),
                  apt_version(common, image.version), apt_version(kbuild, image.version),
                  apt_version(f"linux-source-{major_minor}", image.version))


# --- unpacking -----------------------------------------------------------------------------


def unpack(deb: Path, into: Path) -> None:
    run(["dpkg-deb", "-x", deb, into])


def vmlinux_from_bzimage(bzimage: Path, out: Path) -> None:
    """The uncompressed ELF kernel inside a bzImage: the setup header's payload_offset and
    payload_length (Documentation/arch/x86/boot.rst) locate the compressed vmlinux, whose
    last 4 bytes are its uncompressed size."""
    data = bzimage.read_bytes()
    setup_sects = data[0x1F1] or 4
    payload_offset, payload_length = struct.unpack_from("<II", data, 0x248)
    start = (setup_sects + 1) * 512 + payload_offset
    payload = data[start:start + payload_length - 4]
    if payload[:4] == b"\x28\xb5\x2f\xfd":
        raw = run_bytes(["zstd", "-dcq"], payload)
    elif payload[:6] == b"\xfd7zXZ\x00":
        raw = lzma.decompress(payload)
    elif payload[:2] == b"\x1f\x8b":
        import gzip
        raw = gzip.decompress(payload)
    else:
        raise RuntimeError(f"{bzimage.name}: unknown payload compression {payload[:6].hex()}")
    if raw[:4] != b"\x7fELF":
        raise RuntimeError(f"{bzimage.name}: payload is not an ELF kernel")
    out.write_bytes(raw)


def run_bytes(argv: Sequence[str], data: bytes) -> bytes:
    result = subprocess.run(argv, input=data, capture_output=True)
    if result.returncode != 0:
        raise RuntimeError(f"{argv[0]} exited {result.returncode}: {result.stderr[:300]!r}")
    return result.stdout


def build_netdevsim(kernel: Kernel, debs: Path, work: Path) -> Path:
    """netdevsim.ko compiled out of tree from linux-source with the release's headers."""
    tree = work / "kbuild"
    for package in (kernel.headers, kernel.headers_common, kernel.kbuild):
        unpack(debs / package.filename, tree)
    headers = tree / "usr/src" / f"linux-headers-{kernel.release}"
    common = tree / "usr/src" / kernel.headers_common.name
    # The headers' Makefile includes the common tree by its installed, absolute path.
    (headers / "Makefile").write_text(f"include {common}/Makefile\n")
    source = work / "source"
    source.mkdir()
    series = kernel.source.name.removeprefix("linux-source-")
    member = f"linux-source-{series}/drivers/net/netdevsim"
    deb = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", debs / kernel.source.filename],
                           stdout=subprocess.PIPE)
    inner = subprocess.Popen(["tar", "-xO", f"./usr/src/linux-source-{series}.tar.xz"],
                             stdin=deb.stdout, stdout=subprocess.PIPE)
    assert deb.stdout is not None
    deb.stdout.close()
    extract = subprocess.run(["tar", "-xJ", "-C", source, member], stdin=inner.stdout,
                             capture_output=True, text=True)
    inner.wait()
    deb.wait()
    if extract.returncode != 0:
        raise RuntimeError(f"extracting {member}: {extract.stderr.strip()[:300]}")
    moddir = source / member
    # CONFIG_DEBUG_INFO_BTF_MODULES off: BTF needs pahole and a vmlinux with BTF, and the
    # lab needs neither.
    run(["make", "-C", headers, f"M={moddir}", "CONFIG_NETDEVSIM=m",
         "CONFIG_DEBUG_INFO_BTF_MODULES=", f"-j{os.cpu_count() or 1}", "modules"])
    ko = moddir / "netdevsim.ko"
    run(["strip", "--strip-debug", ko])
    return ko


def module_closure(modules_dir: Path, names: Iterable[str], extra: Mapping[str, Path]
                   ) -> dict[str, Path]:
    """Module name -> file for ``names`` and every module they depend on (``modinfo -F
    depends``); ``extra`` are modules built here; one built into this kernel
    (modules.builtin: virtio_pci in 6.12, a module in 6.1) needs no file."""
    builtin = set()
    if (modules_dir / "modules.builtin").is_file():
        builtin = {Path(line).name.split(".ko")[0].replace("-", "_")
                   for line in (modules_dir / "modules.builtin").read_text().split()}
    files: dict[str, Path] = {}
    for path in modules_dir.rglob("*.ko*"):
        files[path.name.split(".ko")[0].replace("-", "_")] = path
    files.update(extra)
    out: dict[str, Path] = {}
    todo = [n.replace("-", "_") for n in names]
    while todo:
        name = todo.pop()
        if name in out or (name in builtin and name not in files):
            continue
        if name not in files:
            raise RuntimeError(f"module {name} is not in the kernel package")
        out[name] = files[name]
        depends = run(["modinfo", "-F", "depends", files[name]]).stdout.strip()
        todo.extend(d.replace("-", "_") for d in depends.split(",") if d)
    return out


def stage_modules(kernel: Kernel, image_root: Path, netdevsim: Path, root: Path) -> list[str]:
    """The modules the scenarios need, uncompressed (no inflating under emulation), with
    their depmod index, under ``root/usr/lib/modules/<release>``."""
    source = image_root / "lib/modules" / kernel.release
    chosen = module_closure(source, (*GUEST_MODULES, "netdevsim"), {"netdevsim": netdevsim})
    target = root / "usr/lib/modules" / kernel.release
    for name, path in chosen.items():
        rel = ("extra/netdevsim.ko" if name == "netdevsim" else
               str(path.relative_to(source)).removesuffix(".xz").removesuffix(".zst"))
        dest = target / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        if path.name.endswith(".xz"):
            dest.write_bytes(lzma.decompress(path.read_bytes()))
        elif path.name.endswith(".zst"):
            dest.write_bytes(run_bytes(["zstd", "-dcq"], path.read_bytes()))
        else:
            shutil.copyfile(path, dest)
    for name in ("modules.order", "modules.builtin", "modules.builtin.modinfo"):
        if (source / name).is_file():
            shutil.copyfile(source / name, target / name)
    run(["depmod", "-b", root / "usr", kernel.release])
    return sorted(chosen)


# --- Python --------------------------------------------------------------------------------


def requirements() -> list[str]:
    """nicwatch's runtime dependencies, as pyproject.toml declares them."""
    with open(REPO / "pyproject.toml", "rb") as f:
        return list(tomllib.load(f)["project"]["dependencies"])


PIP_PLATFORMS = ("manylinux_2_36_x86_64", "manylinux_2_35_x86_64", "manylinux_2_34_x86_64",
                 "manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
                 "manylinux_2_12_x86_64", "manylinux2010_x86_64", "manylinux_2_5_x86_64",
                 "manylinux1_x86_64")


def download_wheels(wheels: Path, python_version: str) -> list[Path]:
    """Wheels of nicwatch's dependencies for the guest's interpreter (CPython
    ``python_version`` on glibc 2.36), fetched with pip into ``wheels``."""
    target = wheels / python_version
    target.mkdir(parents=True, exist_ok=True)
    platforms = [arg for p in PIP_PLATFORMS for arg in ("--platform", p)]
    result = subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check",
         "--only-binary=:all:", "--implementation", "cp", "--python-version", python_version,
         *platforms, "-d", target, *requirements()], text=True, capture_output=True)
    if result.returncode != 0:
        raise LabUnavailable("pip download of nicwatch's dependencies failed: "
                             + (result.stderr.strip().splitlines() or ["?"])[-1][:300])
    return sorted(target.glob("*.whl"))


def guest_python(root: Path) -> list[str]:
    """argv prefix that runs the guest's Python on this host (same architecture), through
    the guest's own dynamic loader and libraries."""
    libs = ":".join(str(root / d) for d in ("usr/lib/x86_64-linux-gnu", "usr/lib"))
    return [str(root / "usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"), "--library-path", libs,
            str(root / "usr/bin/python3.11")]


def compile_tree(root: Path, directory: str, tree: Path | None = None) -> None:
    """Byte-compile ``tree/directory`` (``tree`` defaults to ``root``) with the guest's
    interpreter under ``root``, recording guest paths (a cold import under emulation costs
    seconds without pycs)."""
    tree = tree or root
    env = {"PYTHONHOME": str(root / "usr"), "PATH": "/usr/bin:/bin", "LC_ALL": "C"}
    run([*guest_python(root), "-m", "compileall", "-q", "-j0", "-s", str(tree), "-p", "/",
         str(tree / directory)], env=env)


# --- cpio ----------------------------------------------------------------------------------


class Cpio:
    """A newc ("070701") archive, the format the kernel unpacks as an initramfs. Owners are
    root; archives can be concatenated (each ends with a TRAILER!!! entry)."""

    def __init__(self, out: Path) -> None:
        self.f = out.open("wb")
        self.ino = 1
        self.seen: set[str] = set()

    def _entry(self, name: str, mode: int, data: bytes = b"", mtime: int = 0,
               rdev: tuple[int, int] = (0, 0)) -> None:
        encoded = name.encode() + b"\0"
        header = b"070701" + b"".join(f"{v:08x}".encode() for v in (
            self.ino, mode, 0, 0, 1, mtime, len(data), 0, 0, rdev[0], rdev[1],
            len(encoded), 0))
        self.ino += 1
        self.f.write(header + encoded)
        self.f.write(b"\0" * (-(len(header) + len(encoded)) % 4))
        self.f.write(data)
        self.f.write(b"\0" * (-len(data) % 4))

    def directory(self, name: str, mode: int = 0o755) -> None:
        parent = name.rpartition("/")[0]
        if parent and parent not in self.seen:
            self.directory(parent)
        if name not in self.seen:
            self.seen.add(name)
            self._entry(name, stat.S_IFDIR | mode)

    def file(self, name: str, data: bytes, mode: int = 0o644, mtime: int = 0) -> None:
        self.directory(name.rpartition("/")[0]) if "/" in name else None
        self.seen.add(name)
        self._entry(name, stat.S_IFREG | mode, data, mtime)

    def symlink(self, name: str, target: str) -> None:
        self.directory(name.rpartition("/")[0]) if "/" in name else None
        self.seen.add(name)
        self._entry(name, stat.S_IFLNK | 0o777, target.encode())

    def node(self, name: str, major: int, minor: int, mode: int = 0o600) -> None:
        self.seen.add(name)
        self._entry(name, stat.S_IFCHR | mode, rdev=(major, minor))

    def tree(self, root: Path, prefix: str = "", skip: Sequence[str] = ()) -> None:
        """Every file under ``root`` (paths mapped through :func:`merged`), keeping modes
        and mtimes (pycs check the mtime of their source)."""
        for path in sorted(root.rglob("*")):
            rel = path.relative_to(root).as_posix()
            name = prefix + rel
            if any(name.startswith(s) for s in skip):
                continue
            if not prefix and rel in USR_MERGE:
                continue  # top-level bin/lib/...: their contents are mapped into usr/
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode):
                target = os.readlink(path)
                self.symlink(name, target)
            elif stat.S_ISDIR(st.st_mode):
                self.directory(name, stat.S_IMODE(st.st_mode))
            elif stat.S_ISREG(st.st_mode):
                self.file(name, path.read_bytes(), stat.S_IMODE(st.st_mode), int(st.st_mtime))

    def close(self) -> None:
        self._entry("TRAILER!!!", 0)
        self.f.close()


def _fix_merged_symlinks(root: Path) -> None:
    """A package symlink into /bin, /lib, ... keeps working in the merged tree as is (the
    guest has /bin -> usr/bin), and a relative one from /lib/x to ../usr/lib/y gains a
    level once moved to usr/lib/x: rewrite those to absolute targets."""
    for top in USR_MERGE:
        base = root / top
        if not base.is_dir() or base.is_symlink():
            continue
        for path in base.rglob("*"):
            if path.is_symlink():
                target = os.readlink(path)
                if not target.startswith("/"):
                    absolute = os.path.normpath(os.path.join("/", path.parent.relative_to(root),
                                                             target))
                    path.unlink()
                    path.symlink_to(absolute)


# --- the guest -----------------------------------------------------------------------------


def recipe_hash() -> str:
    """Changes when this recipe does (this file, the guest's init), not with nicwatch."""
    h = hashlib.sha256()
    for path in (Path(__file__), GUEST_FILES / "init"):
        h.update(path.read_bytes())
    h.update(repr(requirements()).encode())
    return h.hexdigest()[:12]


@dataclass
class Guest:
    """A built guest: boot ``vmlinux`` with ``base.cpio`` plus an :func:`overlay`."""

    directory: Path
    release: str
    version: str
    manifest: dict[str, object] = field(default_factory=dict)

    @property
    def vmlinux(self) -> Path:
        return self.directory / "vmlinux"

    @property
    def base(self) -> Path:
        return self.directory / "base.cpio"


def build(spec: str | None = None, cache: Path | None = None) -> Guest:
    """The guest for ``spec`` (default $NICWATCH_LAB_KERNEL or linux-image-6.12-amd64),
    from the cache or built now. Raises LabUnavailable when packages cannot be had."""
    cache = cache or cache_dir()
    for tool in ("apt-cache", "apt-get", "dpkg-deb", "make", "gcc", "depmod", "modinfo",
                 "zstd", "strip", "tar", "ldconfig"):
        if shutil.which(tool) is None:
            raise LabUnavailable(f"{tool} is not installed (scripts/test installs it)")
    kernel = resolve_kernel(spec or kernel_spec())
    directory = cache / "guests" / f"{kernel.release}-{recipe_hash()}"
    manifest_path = directory / "guest.json"
    if manifest_path.is_file() and (directory / "base.cpio").is_file():
        manifest = json.loads(manifest_path.read_text())
        return Guest(directory, kernel.release, kernel.version, manifest)
    t0 = time.monotonic()
    debs = cache / "debs"
    userspace = closure(GUEST_PACKAGES)
    download([*kernel.packages, *userspace.values()], debs)
    t_download = time.monotonic()
    wheels = download_wheels(cache / "wheels", "3.11")
    directory.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="nicwatch-lab-", dir=directory.parent) as tmp:
        work = Path(tmp)
        image_root = work / "image"
        log(f"unpacking {kernel.image.name}")
        unpack(debs / kernel.image.filename, image_root)
        log("building netdevsim from " + kernel.source.name)
        t_nsim = time.monotonic()
        netdevsim = build_netdevsim(kernel, debs, work)
        t_nsim = time.monotonic() - t_nsim
        root = work / "root"
        for package in sorted(userspace.values(), key=lambda p: p.name):
            unpack(debs / package.filename, root)
        _fix_merged_symlinks(root)
        # Run the guest's interpreter in place: it needs the merged view of its libraries.
        for top, usr in USR_MERGE.items():
            if (root / top).is_dir() and not (root / top).is_symlink():
                (root / usr).mkdir(parents=True, exist_ok=True)
                for entry in (root / top).iterdir():
                    dest = root / usr / entry.name
                    if dest.exists() or dest.is_symlink():
                        if entry.is_dir() and dest.is_dir() and not dest.is_symlink():
                            shutil.copytree(entry, dest, symlinks=True, dirs_exist_ok=True)
                        continue
                    entry.rename(dest)
                shutil.rmtree(root / top)
            (root / top).symlink_to(usr)
        run(["ldconfig", "-r", root])  # /etc/ld.so.cache, as dpkg's trigger would
        modules = stage_modules(kernel, image_root, netdevsim, root)
        site = root / "lab/site"
        site.mkdir(parents=True)
        for wheel in wheels:
            with zipfile.ZipFile(wheel) as z:
                z.extractall(site)
        compile_tree(root, "usr/lib/python3.11")
        compile_tree(root, "lab/site")
        out = work / "out"
        out.mkdir()
        # The guest's interpreter, kept runnable here: each boot byte-compiles the overlay
        # (nicwatch from the working tree) with it.
        for rel in ("usr/bin/python3.11", "usr/lib/python3.11", "usr/lib/x86_64-linux-gnu"):
            dest = out / "python" / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            if (root / rel).is_dir():
                shutil.copytree(root / rel, dest, symlinks=True)
            else:
                shutil.copy2(root / rel, dest)
        vmlinux_from_bzimage(image_root / "boot" / f"vmlinuz-{kernel.release}", out / "vmlinux")
        cpio = Cpio(out / "base.cpio")
        for top, usr in USR_MERGE.items():
            cpio.symlink(top, usr)
        cpio.symlink("usr/bin/python3", "python3.11")
        cpio.directory("dev")
        cpio.node("dev/console", 5, 1)
        cpio.node("dev/null", 1, 3, 0o666)
        for d in ("proc", "sys", "tmp", "run", "root", "etc", "var"):
            cpio.directory(d)
        cpio.tree(root, skip=SKIP_PREFIXES)
        cpio.file("init", (GUEST_FILES / "init").read_bytes(), 0o755)
        cpio.close()
        manifest = {
            "kernel_package": kernel.image.name,
            "kernel_release": kernel.release,
            "kernel_version": kernel.version,
            "netdevsim_from": f"{kernel.source.name} {kernel.source.version}",
            "packages": {p.name: p.version
                         for p in sorted(userspace.values(), key=lambda p: p.name)},
            "wheels": [w.name for w in wheels],
            "modules": modules,
            "seconds": {"download": round(t_download - t0, 1), "netdevsim": round(t_nsim, 1),
                        "total": round(time.monotonic() - t0, 1)},
            "base_cpio_bytes": (out / "base.cpio").stat().st_size,
        }
        (out / "guest.json").write_text(json.dumps(manifest, indent=1) + "\n")
        if directory.exists():
            shutil.rmtree(directory)
        out.rename(directory)
    # Guests of this kernel built by an older recipe are never used again.
    for old in directory.parent.glob(f"{kernel.release}-*"):
        if old != directory and (old / "guest.json").is_file():
            shutil.rmtree(old, ignore_errors=True)
    log(f"built {directory} in {manifest['seconds']['total']} s")  # type: ignore[index]
    return Guest(directory, kernel.release, kernel.version, manifest)


def main() -> int:
    try:
        guest = build()
    except LabUnavailable as e:
        print(f"nicwatch-lab: unavailable: {e}", file=sys.stderr)
        return 3
    print(guest.directory)
    return 0


if __name__ == "__main__":
    sys.exit(main())
