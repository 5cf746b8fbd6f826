"""Every relative link in README.md and docs/**/*.md resolves: the file exists and, for a
link with #anchor into a Markdown file, a heading of that file has that anchor (GitHub's
rule). The README moved its reference text into docs/ (issue #42), so a broken path would
otherwise send the reader nowhere."""

import re

from paths import REPO

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)


def _pages() -> list:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def anchors(text: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation but - and _ dropped, spaces to -,
    repeats numbered."""
    seen: dict[str, int] = {}
    out = set()
    for line in FENCE.sub("", text).splitlines():
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def broken_links(page) -> list[str]:
    text = FENCE.sub("", page.read_text())
    bad = []
    for target in LINK.findall(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            bad.append(f"{target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest.read_text()):
            bad.append(f"{target} (no heading #{anchor})")
    return bad


def test_every_relative_link_resolves():
    bad = {str(p.relative_to(REPO)): b for p in _pages() if (b := broken_links(p))}
    assert not bad, bad


def test_the_check_sees_a_broken_path_and_a_broken_anchor(tmp_path):
    (tmp_path / "a.md").write_text("# Title\n\n## Two words: `x`\n")
    page = tmp_path / "b.md"
    page.write_text("[ok](a.md) [ok](a.md#two-words-x) [web](https://example.com/x)\n"
                    "[gone](c.md) [anchor](a.md#three)\n\n```\n[in code](nowhere.md)\n```\n")
    assert broken_links(page) == ["c.md (no such file)", "a.md#three (no heading #three)"]


def test_the_docs_map_links_every_page():
    """docs/README.md is the map: every page under docs/ is reachable from it."""
    text = (REPO / "docs" / "README.md").read_text()
    linked = {(REPO / "docs" / t.partition("#")[0]).resolve() for t in LINK.findall(text)}
    missing = [str(p.relative_to(REPO)) for p in _pages()[1:]
               if p.name != "README.md" and p.resolve() not in linked]
    assert not missing, missing
