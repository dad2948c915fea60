"""The documentation holds together: every relative link of README.md and docs/ resolves, every
registered judging mode has its page, and README.md stays a front door."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

DOCS = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _links(path: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return [target for target in LINK.findall(text) if not re.match(r"[a-z]+:", target)]


@pytest.mark.parametrize("page", DOCS, ids=[str(page.relative_to(REPO_ROOT)) for page in DOCS])
def test_every_relative_link_resolves(page: Path) -> None:
    broken = [
        target for target in _links(page) if not (page.parent / target.split("#")[0]).resolve().exists()
    ]
    assert broken == []


def test_it_finds_links_to_check() -> None:
    assert len(_links(REPO_ROOT / "README.md")) > 15


@pytest.mark.django_db
def test_every_registered_judging_mode_has_its_page() -> None:
    from labeling.modes import all_modes

    missing = [
        mode.name for mode in all_modes() if not (REPO_ROOT / "docs" / "modes" / f"{mode.name}.md").is_file()
    ]
    assert missing == []
    linked = set(_links(REPO_ROOT / "README.md"))
    assert {f"docs/modes/{mode.name}.md" for mode in all_modes()} <= linked


def test_the_readme_stays_a_front_door() -> None:
    assert len((REPO_ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 200
