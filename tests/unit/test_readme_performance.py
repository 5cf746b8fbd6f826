"""The README's performance table (written by benchmarks/run.py between its markers) agrees
with docs/performance.md, written by the same run: every figure with its unit and the date
of the measurement. The README is a quick start now (issue #42), but this table stays in it."""

import re

from paths import REPO

BEGIN, END = "<!-- benchmark:begin -->", "<!-- benchmark:end -->"
FIGURE = re.compile(r"\d[\d,]*(?:\.\d+)?(?:%| ?ms| ?MB|x)")


def disagreements(readme: str, performance: str) -> list[str]:
    assert BEGIN in readme and END in readme, "benchmarks/run.py writes between the markers"
    block = readme.split(BEGIN, 1)[1].split(END, 1)[0]
    figures = FIGURE.findall(block)
    assert len(figures) >= 10, figures  # the table is there, not an empty block
    date = re.search(r"measured (\d{4}-\d\d-\d\d \d\d:\d\d UTC)", block)
    assert date, "the block says when it was measured"
    return ([f for f in figures if f not in performance]
            + ([] if f"Measured {date.group(1)}" in performance else [date.group(1)]))


def test_readme_performance_figures_are_those_of_docs_performance():
    assert disagreements((REPO / "README.md").read_text(),
                         (REPO / "docs" / "performance.md").read_text()) == []


def test_a_figure_changed_in_one_place_only_is_found():
    readme = (REPO / "README.md").read_text()
    performance = (REPO / "docs" / "performance.md").read_text()
    # the table's own RSS figure, whatever the last run measured (a literal went stale with
    # every run), changed in the README only
    block = readme.split(BEGIN, 1)[1].split(END, 1)[0]
    rss = re.search(r"\| (\d+\.\d) MB \|", block)
    assert rss, "the README's table gives an RSS in MB"
    changed = f"{float(rss.group(1)) + 0.7:.1f} MB"
    assert changed not in performance
    assert disagreements(readme.replace(f"{rss.group(1)} MB", changed), performance) == [changed]
