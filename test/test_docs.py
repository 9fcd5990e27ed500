"""The README and docs stay true to the repository: every file they link or name exists,
every script (and every investigation in research/) is listed, and every `camp` subcommand
the CLI has is documented."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "research" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


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
