"""The lab's guest recipe (tests/lab/build.py) where it needs no registry and no QEMU: the
initramfs archive the kernel unpacks, the bzImage arithmetic, the Depends parser."""

from __future__ import annotations

import lzma
import os
import struct
import subprocess

import build
import pytest


def test_cpio_is_newc_as_gnu_cpio_reads_it_and_archives_concatenate(tmp_path):
    first, second = tmp_path / "a.cpio", tmp_path / "b.cpio"
    archive = build.Cpio(first)
    archive.symlink("bin", "usr/bin")
    archive.node("dev/console", 5, 1)
    archive.file("usr/bin/hello", b"#!/bin/sh\necho hi\n", 0o755, mtime=1_700_000_000)
    archive.close()
    archive = build.Cpio(second)
    archive.file("lab/plan.json", b"{}")
    archive.close()
    out = tmp_path / "out"
    out.mkdir()
    for part in (first, second):  # the kernel unpacks them one after the other
        result = subprocess.run(["cpio", "-idm", "--quiet", "--no-absolute-filenames"],
                                input=part.read_bytes(), cwd=out, capture_output=True)
        assert result.returncode == 0, result.stderr
    # Each ends on a 4-byte boundary, so appended archives start where the kernel looks.
    assert first.stat().st_size % 4 == 0
    assert os.readlink(out / "bin") == "usr/bin"
    assert (out / "usr/bin/hello").read_bytes() == b"#!/bin/sh\necho hi\n"
    assert (out / "usr/bin/hello").stat().st_mode & 0o777 == 0o755
    assert int((out / "usr/bin/hello").stat().st_mtime) == 1_700_000_000
    assert (out / "lab/plan.json").read_bytes() == b"{}"
    listing = subprocess.run(["cpio", "-itv", "--quiet"], input=first.read_bytes(),
                             capture_output=True, check=True).stdout.decode()
    assert "dev/console" in listing and listing.splitlines()[1].startswith("crw")


def test_vmlinux_is_found_through_the_setup_header(tmp_path):
    """payload_offset/payload_length at 0x248/0x24c, relative to the protected-mode code
    after (setup_sects + 1) sectors; the payload ends with the 4-byte uncompressed size."""
    elf = b"\x7fELF" + b"kernel" * 100
    payload = lzma.compress(elf, format=lzma.FORMAT_XZ) + struct.pack("<I", len(elf))
    setup_sects = 3
    image = bytearray((setup_sects + 1) * 512 + 64)
    image[0x1F1] = setup_sects
    struct.pack_into("<II", image, 0x248, 64, len(payload))
    image += payload
    bz = tmp_path / "vmlinuz"
    bz.write_bytes(bytes(image))
    build.vmlinux_from_bzimage(bz, tmp_path / "vmlinux")
    assert (tmp_path / "vmlinux").read_bytes() == elf


def test_a_payload_that_is_no_kernel_is_refused(tmp_path):
    image = bytearray(5 * 512 + 16)
    image[0x1F1] = 4
    struct.pack_into("<II", image, 0x248, 0, 16)
    image[5 * 512:] = b"not compressed!!"
    (tmp_path / "vmlinuz").write_bytes(bytes(image))
    with pytest.raises(RuntimeError, match="unknown payload compression"):
        build.vmlinux_from_bzimage(tmp_path / "vmlinuz", tmp_path / "vmlinux")


def test_depends_keep_alternatives_in_order():
    # iproute2's Depends in bookworm, as apt-cache show prints it
    text = ("debconf (>= 0.5) | debconf-2.0, libbpf1 (>= 1:0.6.0), libc6 (>= 2.34), "
            "libxtables12 (>= 1.6.0+snapshot20161117), libcap2-bin")
    assert build._parse_depends(text) == (("debconf", "debconf-2.0"), ("libbpf1",),
                                          ("libc6",), ("libxtables12",), ("libcap2-bin",))


def test_package_file_name_is_apt_get_downloads():
    package = build.Package("ethtool", "1:6.1-1", "amd64", 0, ())
    assert package.filename == "ethtool_1%3a6.1-1_amd64.deb"
