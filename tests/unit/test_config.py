"""Configuration: TOML + flags, and one-line errors with exit status 2 for bad input."""

import os
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nicwatch.config import (
    SETTINGS,
    ConfigError,
    build,
    example_toml,
    parse_duration,
    split_listen_address,
)
from nicwatch.metrics import FAMILIES

from bad_config import BAD_FILES
from paths import REPO

ROOT = REPO
NICWATCH = str(Path(sys.executable).with_name("nicwatch"))


def run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([NICWATCH, *argv], capture_output=True, text=True, timeout=30)


def test_defaults_file_and_flags_layer(tmp_path):
    f = tmp_path / "n.toml"
    f.write_text('interval = "2s"\n[web]\nlisten_address = "127.0.0.1:1"\n'
                 '[collector]\nper_queue = ["rx_buff_alloc_err"]\n')
    c = build(str(f), {"web.listen_address": "[::1]:9000"})
    assert c.interval == 2.0
    assert c.listen == ("::1", 9000)
    assert c.raw_options.per_queue == ("rx_buff_alloc_err",)
    assert build(None, {}).listen == ("0.0.0.0", 10847)


@pytest.mark.parametrize("text, needle", [
    ('interval = "5 parsecs"', "key 'interval'"),
    ("[web]\nlisten = ':1'", "unknown key 'web.listen'"),
    ('[interfaces]\ninclude = "(eth"', "key 'interfaces.include': bad regular expression"),
    ("[collector]\nraw = 3", "key 'collector.raw'"),
    ("interval = ", "not valid TOML"),
    ('[web]\nlisten_address = "nohost"', "key 'web.listen_address'"),
])
def test_bad_config_file_is_one_line_exit_2(tmp_path, text, needle):
    f = tmp_path / "bad.toml"
    f.write_text(text)
    with pytest.raises(ConfigError, match=needle):
        build(str(f), {})
    r = run("show", "--config", str(f))
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and str(f) in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("text, message", [
    # A typo listed all 25 keys; a close key is named instead, with its table if it has one.
    ('intervall = "5s"', "unknown key 'intervall': did you mean 'interval'?"),
    ('listen_adress = ":1"', "unknown key 'listen_adress': did you mean 'web.listen_address' "
                             "(under [web])?"),
    ('listen_address = ":1"', "unknown key 'listen_address': did you mean "
                              "'web.listen_address' (under [web])?"),
    ('[web]\nlisten_adress = ":1"', "unknown key 'web.listen_adress': did you mean "
                                    "'web.listen_address' (under [web])?"),
    ('[colector]\nvfs = true', "unknown key 'colector.vfs': did you mean 'collector.vfs' "
                               "(under [collector])?"),
])
def test_a_misspelt_key_is_named_with_the_key_meant(tmp_path, text, message):
    f = tmp_path / "typo.toml"
    f.write_text(text + "\n")
    r = run("show", "--config", str(f))
    assert (r.returncode, r.stderr) == (2, f"nicwatch: error: {f}: {message}\n"), r.stderr


def test_a_key_like_none_still_lists_them_all(tmp_path):
    f = tmp_path / "far.toml"
    f.write_text("zzz = 1\n")
    with pytest.raises(ConfigError, match=r"unknown key 'zzz' \(known: interval, "
                                          r"web.listen_address, "):
        build(str(f), {})


@pytest.mark.parametrize("argv, needle", [
    (["serve", "--interval", "0s"], "--interval"),
    (["serve", "--web.listen-address", "1.2.3.4"], "--web.listen-address"),
    (["show", "--interfaces.include", "["], "--interfaces.include"),
    (["serve", "--no-such-flag"], "--no-such-flag"),
    (["show", "--config", "/nonexistent/n.toml"], "/nonexistent/n.toml"),
    # A mistyped sysfs root served an empty exposition and exited 0 (show) or looked
    # healthy (serve): refused at start, because nothing useful can come of it.
    (["show", "--path.sysfs", "/nonexistent"], "--path.sysfs /nonexistent: no class/net"),
])
def test_bad_flags_are_one_line_exit_2(argv, needle):
    r = run(*argv)
    assert r.returncode == 2, r
    assert needle in r.stderr and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


def test_an_endless_config_file_is_one_line_exit_2(tmp_path):
    """`--config /dev/zero` used to read forever: a FIFO that never ends (fed until the
    reader hangs up) and a sparse 4 GiB file are both refused after 1 MiB."""
    import threading

    from nicwatch.config import MAX_FILE_BYTES
    endless = tmp_path / "endless.toml"
    os.mkfifo(endless)

    def feed():
        try:
            with open(endless, "wb") as f:
                while True:
                    f.write(bytes(65536))
        except BrokenPipeError:
            pass
    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    huge = tmp_path / "huge.toml"
    with open(huge, "wb") as f:
        f.truncate(4 << 30)
    for path in (endless, huge):
        r = run("show", "--config", str(path))
        assert r.returncode == 2, r
        assert r.stderr == (f"nicwatch: error: {path}: larger than {MAX_FILE_BYTES >> 20} "
                            "MiB, not a config file\n")
    writer.join(timeout=10)
    assert not writer.is_alive()  # the reader hung up: nothing reads on


def test_port_in_use_is_one_line_exit_2(tmp_path):
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        r = run("serve", f"--web.listen-address=127.0.0.1:{port}",
                f"--state.file={tmp_path / 's.json'}")
    assert r.returncode == 2
    assert f"127.0.0.1:{port}" in r.stderr.splitlines()[-1] and "Traceback" not in r.stderr


@settings(max_examples=50, deadline=None)
@given(st.text(max_size=30))
def test_any_interval_string_is_a_duration_or_a_clear_error(text):
    try:
        assert parse_duration(text) > 0
    except ValueError as e:
        assert repr(text) in str(e)


@given(st.text(max_size=30))
def test_any_listen_address_parses_or_fails_cleanly(text):
    try:
        _host, port = split_listen_address(text)
        assert 0 <= port <= 65535
    except ValueError as e:
        assert "HOST:PORT" in str(e)


def test_reference_documents_every_flag_and_family():
    """The README's flag and metric tables moved to docs/reference/ (issue #42): the flag
    table is generated from SETTINGS (its staleness test is tests/unit/cli/test_flags_doc.py),
    the metrics overview is written by hand and must name every declared family."""
    flags = (ROOT / "docs" / "reference" / "flags.md").read_text()
    for s in SETTINGS:
        assert f"`{s.flag}" in flags, s.flag
        assert f"`{s.key}`" in flags, s.key
    overview = (ROOT / "docs" / "reference" / "metrics-overview.md").read_text()
    for name in FAMILIES:
        assert f"`{name}`" in overview, name


def test_example_config_is_valid():
    c = build(str(ROOT / "deploy" / "nicwatch.toml"), {})
    assert c.interval == 5.0


def test_example_config_is_generated_from_the_settings():
    """The example called "every key" lacked 10 of 25 keys and set state.file, which a
    non-root daemon cannot write; it is now written from SETTINGS (deploy/generate_config.py)."""
    text = (ROOT / "deploy" / "nicwatch.toml").read_text()
    assert text == example_toml(), "run deploy/generate_config.py"
    example = build(str(ROOT / "deploy" / "nicwatch.toml"), {})
    assert settings_of(example) == settings_of(build(None, {}))  # every line commented


def test_every_key_uncommented_parses_back_to_its_default(tmp_path):
    """Each commented line, uncommented, is valid TOML for its key and parses to the
    default SETTINGS declares: the example shows every default as it is."""
    lines = []
    for line in example_toml().splitlines():
        m = re.fullmatch(r"#(\w+) = (.+)", line)
        if m and "no default" not in line and not line.startswith("#["):
            lines.append(f"{m[1]} = {m[2].split('  #')[0]}")
        elif re.fullmatch(r"\[\w+\]", line):
            lines.append(line)
        elif line.startswith("# Incident capture"):
            break
    f = tmp_path / "every.toml"
    f.write_text("\n".join(lines) + "\n")
    given = {k for k, _ in _flat_keys(tomllib.loads(f.read_text()))}
    assert given == {s.key for s in SETTINGS if s.default is not None}
    assert settings_of(build(str(f), {})) == settings_of(build(None, {}))


def settings_of(config):
    return {s.key: getattr(config, s.key.replace(".", "_")) for s in SETTINGS}


def _flat_keys(table, prefix=""):
    for k, v in table.items():
        if isinstance(v, dict):
            yield from _flat_keys(v, f"{prefix}{k}.")
        else:
            yield f"{prefix}{k}", v


def test_the_example_names_every_capture_and_trigger_key():
    from nicwatch.consumers import incidents
    text = example_toml()
    capture = text[text.index("#[capture]"):]
    for key in [*incidents._SETTINGS, *incidents._TRIGGER_KEYS]:
        if key != "trigger":
            assert re.search(rf"^#{key} = ", capture, re.M), key




@pytest.mark.parametrize("case", BAD_FILES)
def test_out_of_bounds_and_hostile_files_are_one_line_exit_2(tmp_path, case):
    content, needle = BAD_FILES[case]
    f = tmp_path / "bad.toml"
    f.write_bytes(content)
    with pytest.raises(ConfigError) as e:
        build(str(f), {})
    assert needle in str(e.value) and str(f) in str(e.value)
    r = run("serve", "--config", str(f), f"--state.file={tmp_path / 's.json'}")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


@pytest.mark.parametrize("flag, value", [
    ("--interval", "99999999999999999999999h"), ("--interval", "0.05s"),
    ("--interval", "1" + "0" * 400), ("--rates.peak-window", "48h"),
    ("--history.window", "0.5s"), ("--history.max-bytes", "99999999999GiB"),
])
def test_out_of_bounds_flags_are_one_line_exit_2(tmp_path, flag, value):
    r = run("serve", f"{flag}={value}", f"--state.file={tmp_path / 's.json'}")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert r.stderr.startswith(f"nicwatch: error: flag {flag}: ")
    assert "must be between" in r.stderr or "duration out of range" in r.stderr


def test_the_bounds_themselves_are_accepted():
    c = build(None, {"interval": "100ms", "history.window": "168h",
                     "history.max_bytes": "64KiB", "rates.peak_window": "24h"})
    assert (c.interval, c.history_window, c.history_max_bytes, c.rates_peak_window) == (
        0.1, 7 * 86400, 64 << 10, 86400)
    assert build(None, {"interval": "1h"}).interval == 3600


@pytest.mark.parametrize("fds, needle", [
    ("abc", "LISTEN_FDS is 'abc'"), ("0", "LISTEN_FDS is '0'"),
    ("9" * 40, "not a number of sockets"), ("1", "file descriptor 3 (LISTEN_FDS=1) is not a "
                                                 "socket"),
])
def test_bad_socket_activation_environment_is_one_line_exit_2(tmp_path, fds, needle):
    # exec keeps the PID, so LISTEN_PID names the daemon as systemd would; fd 3 is a file.
    (tmp_path / "f").write_text("x")
    r = subprocess.run(["sh", "-c", f'LISTEN_PID=$$ LISTEN_FDS={fds} exec "$@" 3<"$0"',
                        str(tmp_path / "f"), NICWATCH, "serve", "--web.systemd-socket",
                        f"--state.file={tmp_path / 's.json'}"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.count("\n") == 1 and needle in r.stderr, r.stderr


def test_serve_with_a_sysfs_root_that_is_none_is_one_line_exit_2(tmp_path):
    r = run("serve", "--path.sysfs=/nonexistent", f"--state.file={tmp_path / 's.json'}",
            "--web.listen-address=127.0.0.1:0")
    assert r.returncode == 2 and r.stderr == (
        "nicwatch: error: --path.sysfs /nonexistent: no class/net directory there (not a "
        "sysfs mount)\n")


def test_default_port_is_outside_the_exhausted_exporter_block_and_used_everywhere():
    """9100-9999 of the Prometheus default port allocations is taken (full since 2023): the
    default lies outside it, and every shipped file that names a port names the default."""
    from nicwatch.values import DEFAULT_PORT

    from paths import REPO
    assert not 9100 <= DEFAULT_PORT <= 9999
    for name in ("README.md", "systemd/nicwatch.socket", "deploy/kubernetes/daemonset.yaml",
                 "deploy/kubernetes/service.yaml", "deploy/container/Containerfile",
                 "deploy/prometheus/prometheus.yml", "scripts/run"):
        assert str(DEFAULT_PORT) in (REPO / name).read_text(), name


def test_every_setting_is_declared_once_with_its_default_used():
    """SETTINGS is the one declaration (key, flag, parser, default, help): Config has one
    field per setting, whose default is the setting's, and nothing else but the sections."""
    import dataclasses

    from nicwatch.config import SETTINGS, Config

    fields = {f.name: f for f in dataclasses.fields(Config)}
    attrs = {s.key.replace(".", "_"): s for s in SETTINGS}
    assert fields.keys() - attrs.keys() == {"sections", "source"}
    assert attrs.keys() <= fields.keys()
    assert all(fields[a].default == s.default for a, s in attrs.items())
    # and each default is a value its own parser accepts back (bounds included)
    for s in SETTINGS:
        if s.default is not None and not isinstance(s.default, tuple):
            shown = str(s.default).lower() if isinstance(s.default, bool) else s.default
            assert s.parse(shown) == s.default, s.key


def test_config_imports_no_consumer_and_each_owner_declares_its_sections():
    """The import direction is consumers -> config: config parses the sections its owners
    registered (consumers.registry imports every owner), and names none of them itself."""
    script = ("import sys, nicwatch.config\n"
              "print(sorted(m for m in sys.modules if m.startswith('nicwatch.consumers')))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
    import nicwatch.consumers.registry  # noqa: F401
    from nicwatch.config import SECTIONS
    assert {n: s.keys for n, s in SECTIONS.items()} == {
        "expectations": ("expect", "consistent"), "capture": ("capture",)}


def test_a_section_its_owner_registers_is_parsed_and_defaults_without_the_file(tmp_path):
    """In a process of its own: the registry is a declaration, never cleared by a test."""
    path = tmp_path / "nicwatch.toml"
    path.write_text('interval = "2s"\n[[fabric_test]]\nname = "a"\n')
    script = textwrap.dedent(f"""
        from nicwatch import config
        from nicwatch.values import ConfigError
        try:
            config.build({str(path)!r}, {{}})
        except ConfigError as e:
            print("before:", e)
        seen = []
        def parse(data, path):
            seen.append(path)
            return tuple(data.get("fabric_test", ()))
        section = config.Section("fabric_test", ("fabric_test",), parse, tuple)
        config.register_section(section)
        config.register_section(section)  # the same declaration again: nothing
        built = config.build({str(path)!r}, {{}})
        print(built.section("fabric_test"), seen, built.interval,
              config.Config().section("fabric_test"))
        for name, keys in (("other", ("fabric_test",)), ("fabric_test", ("x",)),
                           ("web", ("web",))):
            try:
                config.register_section(config.Section(name, keys, parse, tuple))
            except ValueError:
                print("refused", name)
        """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out == [f"before: {path}: unknown key 'fabric_test' (known: " + out[0].split(
                       "(known: ", 1)[1],
                   f"({{'name': 'a'}},) ['{path}'] 2.0 ()",
                   "refused other", "refused fabric_test", "refused web"]
