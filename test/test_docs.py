"""The README and docs stay true to the repository: every file they link or name exists,
every script (and every investigation in research/) is listed, and every `camp` subcommand
the CLI has is documented. The docs stay a product: few files, small, results pages that
cite their records, and a README of one page with the two commands."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "research" / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
RESULTS = ROOT / "docs" / "results"
DOMAIN_PAGES = ["gridworld.md", "dinner.md", "namo.md", "manip.md", "ros.md"]


def _links(text: str) -> list[str]:
    """Relative targets of Markdown links and images (anchors and URLs left out)."""
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    return [t.split("#")[0] for t in targets if not re.match(r"[a-z]+:|#", t) and t.split("#")[0]]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_linked_file_exists(doc: Path) -> None:
    missing = [t for t in _links(doc.read_text()) if not (doc.parent / t).exists()]
    assert not missing, f"{doc.name} links to files that do not exist: {missing}"


def test_every_repository_path_the_readme_names_exists() -> None:
    text = (ROOT / "README.md").read_text()
    named = set(
        re.findall(r"\b((?:docs|config|scripts|research|launch|examples)/[\w./-]+\.\w+)", text)
    )
    assert named, "the README names no files: the pattern is wrong"
    missing = sorted(p for p in named if not (ROOT / p).exists())
    assert not missing, f"the README names files that do not exist: {missing}"


def test_every_script_is_in_the_readmes_table() -> None:
    text = (ROOT / "README.md").read_text()
    scripts = sorted(p.name for p in (ROOT / "scripts").iterdir() if p.suffix in {".py", ".sh"})
    assert scripts
    unlisted = [s for s in scripts if f"`{s}`" not in text]
    assert not unlisted, f"scripts missing from the README's table: {unlisted}"


def test_every_investigation_is_in_the_research_readmes_table() -> None:
    text = (ROOT / "research" / "README.md").read_text()
    scripts = sorted(p.name for p in (ROOT / "research").glob("*.py"))
    assert scripts
    unlisted = [s for s in scripts if f"| `{s}` |" not in text]
    assert not unlisted, f"investigations missing from research/README.md: {unlisted}"


def test_every_cli_subcommand_is_documented() -> None:
    from camp_planner.cli import build_parser

    parser = build_parser()
    choices = next(
        a.choices for a in parser._actions if getattr(a, "choices", None) and a.dest == "command"
    )
    text = (ROOT / "README.md").read_text()
    undocumented = [c for c in choices if f"`camp {c}" not in text]
    assert not undocumented, f"camp subcommands missing from the README: {undocumented}"


def test_the_docs_stay_small() -> None:
    files = [p for p in (ROOT / "docs").rglob("*") if p.is_file()]
    size = sum(p.stat().st_size for p in files)
    assert len(files) <= 40, (
        f"docs/ holds {len(files)} files (at most 40): run records go to artifacts/"
    )
    assert size <= 3 * 1024 * 1024, f"docs/ holds {size / 1e6:.1f} MB (at most 3 MB)"


def test_the_reference_records_are_few_and_each_is_cited() -> None:
    data = [p for p in (RESULTS / "data").iterdir() if p.is_file()]
    assert 0 < len(data) <= 28, f"docs/results/data holds {len(data)} files (at most 28)"
    assert sum(p.stat().st_size for p in data) <= 2 * 1024 * 1024
    pages = "".join((RESULTS / page).read_text() for page in DOMAIN_PAGES)
    uncited = sorted(p.name for p in data if p.name not in pages)
    assert not uncited, f"records no results page cites (delete them; git keeps them): {uncited}"


def test_each_domain_has_a_short_results_page_with_command_machine_and_commit() -> None:
    for page in DOMAIN_PAGES:
        text = (RESULTS / page).read_text()
        assert len(text.splitlines()) <= 300, f"{page} is longer than a few hundred lines"
        assert "```bash" in text, f"{page} gives no command"
        assert "2-core" in text, f"{page} names no machine"
        assert re.search(r"commits?:? `[0-9a-f]{7,40}`", text, re.I), f"{page} names no commit"
        assert "](data/" in text, f"{page} shows no plot or record of docs/results/data"
    assert len((RESULTS / "history.md").read_text().splitlines()) <= 400


def test_readme_and_results_pages_carry_no_lab_notebook() -> None:
    pattern = re.compile(r"\bevals? v\d+|issue's target|the issue\b|slow phase|\bVM was\b", re.I)
    for doc in [ROOT / "README.md", *(RESULTS / page for page in DOMAIN_PAGES)]:
        found = pattern.findall(doc.read_text())
        assert not found, f"{doc.relative_to(ROOT)} reads as a log: {found}"


def test_the_readme_is_one_page_with_the_two_commands() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines (at most 300)"
    for command in (
        "make demo   # set up everything, then NAMO over ROS 2 in a closed loop: scene → "
        "context → CAMP → TAMP → controllers → disturbance → replan (PNG)",
        "make test   # set up everything, then lint (ruff), type-check (mypy --strict), "
        "run all tests",
    ):
        assert command in lines, f"the README lacks the command line {command!r}"
    text = "\n".join(lines)
    for page in DOMAIN_PAGES:
        assert f"(docs/results/{page})" in text, f"the README does not link docs/results/{page}"


def test_the_section_names_research_cites_exist_in_the_history() -> None:
    history = (RESULTS / "history.md").read_text()
    names = [
        headline
        for headline in re.findall(r'"([^"]+)"', (ROOT / "research" / "README.md").read_text())
        if headline != "What it means"
    ]
    assert names, "research/README.md cites no section: the pattern is wrong"
    missing = [name for name in names if name not in history]
    assert not missing, f"sections research/README.md cites that history.md lacks: {missing}"


def test_the_configs_are_few_each_in_its_domains_folder_saying_what_it_is_for() -> None:
    files = sorted(p for p in (ROOT / "config").rglob("*") if p.is_file())
    assert 0 < len(files) <= 17  # one RViz view per system among them
    for path in files:
        assert path.parent.parent == ROOT / "config", f"{path}: config/<domain or ros>/<file>"
        first = path.read_text().splitlines()[0]
        assert first.startswith("# ") and len(first) > 20, f"{path}: starts with its purpose"
