"""The documentation holds together: every relative link of README.md and docs/ resolves, every
registered judging mode has its page, every setting a page names exists, the judges page says
what the outbound settings do, and README.md stays a front door."""

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


# Prefixes of the project's own settings (config/settings.py); a name with one of them in a page
# is a setting, or a name the settings read (an old name, the development default's key variable
# `JUDGE_API_KEY`), except this command-line metavar (`--judge JUDGE_LABELS`).
OWN_PREFIXES = ("JUDGE_", "LABELING_", "OUTBOUND_", "WEBHOOK_", "WEBHOOKS_", "SXS_", "TRAINING_")
NOT_SETTINGS = {"JUDGE_LABELS"}


def test_every_setting_a_page_names_exists() -> None:
    from django.conf import settings

    named = {
        (page.relative_to(REPO_ROOT).as_posix(), name)
        for page in DOCS
        for name in re.findall(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b", page.read_text(encoding="utf-8"))
        if name.startswith(OWN_PREFIXES) and name not in NOT_SETTINGS
    }
    read = (REPO_ROOT / "config/settings.py").read_text(encoding="utf-8")
    assert len(named) > 20, "the pages name the settings they describe"
    unknown = [
        (page, name) for page, name in sorted(named) if not hasattr(settings, name) and name not in read
    ]
    assert unknown == []


def test_the_judges_page_says_which_hosts_a_judge_may_call() -> None:
    """The settings restrict a judge's endpoint to the operator's hosts; the page says so and
    nowhere the opposite (an old 'not done yet' line said the base URL was not restricted)."""
    from django.conf import settings

    text = " ".join((REPO_ROOT / "docs/judges.md").read_text(encoding="utf-8").split())
    assert hasattr(settings, "OUTBOUND_ALLOWED_HOSTS") and "OUTBOUND_ALLOWED_HOSTS" in text
    assert not re.search(
        r"base URL is not restricted|not restricted to a list of hosts|any address it can reach", text
    )
