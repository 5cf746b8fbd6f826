"""docs/reference/flags.md is generated from config.SETTINGS and the command line parser
(python -m nicwatch.cli.flagsdoc); it must not drift, and it names every flag, TOML key and
command. (These checks read the README's flag table until the README became a quick start.)"""

from nicwatch.cli import common, flagsdoc
from nicwatch.config import SETTINGS

from paths import REPO

FLAGS_MD = REPO / "docs" / "reference" / "flags.md"


def test_docs_reference_flags_md_is_up_to_date():
    assert FLAGS_MD.read_text() == flagsdoc.render(), (
        f"docs/reference/flags.md is stale; regenerate it with `{flagsdoc.COMMAND}`")


def test_every_flag_key_and_command_is_documented():
    text = FLAGS_MD.read_text()
    for s in SETTINGS:
        assert f"`{s.flag}" in text, s.flag
        assert f"`{s.key}`" in text, s.key
    for c in common.COMMANDS:
        assert f"### `nicwatch {c.name}`" in text, c.name


def test_a_setting_missing_from_the_page_fails(monkeypatch):
    """The comparison is with the page on disk: a setting added to SETTINGS without
    regenerating makes the rendered page differ from it."""
    import dataclasses

    extra = dataclasses.replace(SETTINGS[0], key="x.new_key", flag="--x.new-key")
    monkeypatch.setattr(flagsdoc.config, "SETTINGS", (*SETTINGS, extra))
    rendered = flagsdoc.render()
    assert "`--x.new-key DURATION`" in rendered and "`x.new_key`" in rendered
    assert rendered != FLAGS_MD.read_text()


def test_every_command_has_a_row_in_the_commands_reference():
    """docs/reference/commands.md (the README's command table until issue #42) says what
    every command does; written by hand, so a command added without its row fails here."""
    text = (REPO / "docs" / "reference" / "commands.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| `nicwatch ")]
    for c in common.COMMANDS:
        assert any(f"`nicwatch {c.name}" in row for row in rows), c.name
