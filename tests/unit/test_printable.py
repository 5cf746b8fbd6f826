"""Names with escape sequences: the kernel allows any byte in an interface name but '/',
':' and whitespace, so a name can carry a terminal escape. Every text output escapes it."""

from __future__ import annotations

import secrets
import subprocess
from pathlib import Path

import pytest

from nicwatch.printable import printable

from netns import have_root_and_tools, sh

NICWATCH = str(Path(__import__("sys").executable).with_name("nicwatch"))
HOSTILE = b"e\x1b[2J\x1b]0;x\x07"  # clear the screen, retitle the window: 12 bytes


@pytest.mark.parametrize("text, shown", [
    ("eth0", "eth0"),
    ("e\x1b[2J", "e\\x1b[2J"),
    ("a\u202eb", "a\\u202eb"),  # right-to-left override
    ("x\x7f\x85y", "x\\x7f\\x85y"),  # DEL and a C1 control
    ("tab\there", "tab\\x09here"),
    ("émoji ✓ 𝄞", "émoji ✓ 𝄞"),  # printable non-ASCII stays
])
def test_printable(text, shown):
    assert printable(text) == shown


def test_printable_keeps_what_it_is_told():
    assert printable("a\nb\x1b", keep="\n") == "a\nb\\x1b"


@pytest.mark.skipif(not have_root_and_tools(), reason="needs root, ip and ethtool")
def test_show_and_check_escape_a_hostile_interface_name(tmp_path):
    ns = f"nwp-{secrets.token_hex(3)}"
    sh("ip", "netns", "add", ns)
    try:
        subprocess.run([b"ip", b"-n", ns.encode(), b"link", b"add", HOSTILE, b"type", b"veth",
                        b"peer", b"name", b"plain0"], check=True, capture_output=True)
        config = tmp_path / "check.toml"
        config.write_text('[[expect]]\ninterfaces = ".*"\nmtu = 9000\n')
        shown = "e\\x1b[2J\\x1b]0;x\\x07"
        for argv in (["show"], ["check", "--config", str(config)]):
            argv += ["--interfaces.include", ".*"]
            r = subprocess.run(["ip", "netns", "exec", ns, NICWATCH, *argv],
                               capture_output=True, timeout=60)
            out = r.stdout.decode()
            assert r.returncode in (0, 1), r.stderr
            assert "\x1b" not in out and "\x07" not in out, out
            assert shown in out and "plain0" in out, out
    finally:
        sh("ip", "netns", "del", ns, check=False)


def test_a_real_escape_and_a_literal_one_never_print_alike():
    """The issue: `hx<ESC>[2J` and `hx\\x1b[2J` printed identically, and the FIX command
    of one targeted the other."""
    from nicwatch.printable import shell_word
    real, literal = "hx\x1b[2J", "hx\\x1b[2J"
    assert printable(real) != printable(literal)
    assert printable(literal) == "hx\\\\x1b[2J"
    assert shell_word(real) == "$'hx\\x1b[2J'" and shell_word(literal) == "'hx\\x1b[2J'"
    for name in (real, literal, "it's", "a\\'b\x07", "eth0"):
        word = shell_word(name)
        assert word.isprintable()
        out = subprocess.run(["bash", "-c", f"printf %s {word}"], capture_output=True,
                             check=True).stdout
        assert out == name.encode(), (name, word)
