"""WCAG 2.1 A/AA on every page of the generated demo, checked by axe-core (vendored from the npm
registry: tests/e2e/vendor/README.md) in headless chromium at a phone's and a laptop's width, in
the light and the dark theme. A critical or serious violation fails the test, listed page by
page. One browser per size; each page is loaded once and checked in both themes.

The dark theme changes colours only on the app's pages (`test_the_app_s_dark_theme_changes_colours_
only` holds it to that), so there it is checked with axe's colour rules; every other rule reads a
DOM and a layout the light theme's check has just read. The API docs' dark theme moves margins
too, so that page gets every rule in both themes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from demo.loading import demo_campaign_draft, demo_fill_and_start
from graded.demo import DEMO_CAMPAIGN, DEMO_JUDGED_CAMPAIGN
from labeling.models import Campaign
from pairwise.demo import DEMO_TOPK_CAMPAIGN
from sxs.demo import DEMO_SXS_CAMPAIGN
from tests.e2e.helpers import log_in_demo

AXE = Path(__file__).parent / "vendor" / "axe.min.js"
SIZES = {"phone": (390, 844), "desktop": (1400, 900)}
THEMES = ("light", "dark")
WCAG_21_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
FAILING = {"critical", "serious"}
# The WCAG 2.1 A/AA rules of axe whose outcome depends on colours (contrast; links told apart from
# their text by colour).
COLOUR_RULES = ["color-contrast", "link-in-text-block"]
# What the app's dark theme may set (tests/e2e/test_accessibility.py's module docstring).
COLOUR_PROPERTIES = {"background", "background-color", "color", "border-color", "color-scheme"}
STATIC = Path(__file__).parents[2] / "static"
API_DOCS_CSS = STATIC / "api_docs" / "api-docs.css"
DEMO_PAIRWISE_CAMPAIGN = "Demo: sustainable cities, pairwise preferences"


@pytest.fixture
def demo(demo_loaded: None) -> dict[str, int]:
    """The demo's campaigns by mode, and a pairwise campaign on the same collection (the demo has
    top-k only, which shares the pair page)."""
    campaigns = list(Campaign.objects.order_by("pk"))
    pairwise, _ = demo_campaign_draft(DEMO_PAIRWISE_CAMPAIGN, judging_mode="pairwise", budget=100, seed=7)
    demo_fill_and_start(pairwise, topics_limit=2)
    ids = {campaign.judging_mode: campaign.pk for campaign in campaigns}
    ids["graded"] = Campaign.objects.get(name=DEMO_CAMPAIGN).pk
    ids["judged"] = Campaign.objects.get(name=DEMO_JUDGED_CAMPAIGN).pk
    ids["topk"] = Campaign.objects.get(name=DEMO_TOPK_CAMPAIGN).pk
    ids["sxs"] = Campaign.objects.get(name=DEMO_SXS_CAMPAIGN).pk
    ids["pairwise"] = pairwise.pk
    return ids


def coordinator_pages(ids: dict[str, int]) -> list[tuple[str, str]]:
    """(name, path) of every page a coordinator reaches."""
    pages = [
        ("home", "/"),
        ("campaign list", "/campaigns/"),
        ("new campaign", "/campaigns/new/"),
        ("clone", f"/campaigns/{ids['graded']}/clone/"),
        ("delete", f"/campaigns/{ids['graded']}/delete/"),
        ("judge chooser", "/judge/"),
        ("pairwise settings", f"/pairwise/{ids['topk']}/settings/"),
        ("top-k results", f"/pairwise/{ids['topk']}/results/"),
        ("side-by-side settings", f"/sxs/{ids['sxs']}/settings/"),
        ("API docs", "/api/docs/"),
    ]
    for mode in ("graded", "judged", "pairwise", "topk", "sxs", "training"):
        pages.append((f"{mode} campaign", f"/campaigns/{ids[mode]}/"))
        pages.append((f"{mode} dashboard", f"/campaigns/{ids[mode]}/dashboard/"))
    return pages


def assessor_pages(ids: dict[str, int]) -> list[tuple[str, str]]:
    """(name, path) of the assessor's pages: the judge page of every mode, My judgments."""
    pages = [("assessor home", "/"), ("my judgments", "/my-judgments/"), ("keyboard", "/account/keyboard/")]
    modes = ("graded", "pairwise", "topk", "sxs", "training")
    pages += [(f"{mode} judge", f"/judge/{ids[mode]}/") for mode in modes]
    return pages


def settle(page: Any, path: str) -> None:
    """Wait for what the page's scripts draw: a judge page's first item, a dashboard's figures,
    the API docs' operations."""
    page.wait_for_load_state("load")
    if path.startswith("/judge/") and path != "/judge/":
        page.wait_for_function(
            "!document.getElementById('item').hidden || !document.getElementById('empty').hidden"
        )
    elif path == "/api/docs/":
        page.locator(".opblock").first.wait_for()
    elif "dashboard" in path or "results" in path:
        page.wait_for_load_state("networkidle")


def axe_violations(page: Any, rules: list[str] | None = None) -> list[dict[str, Any]]:
    """axe's critical and serious violations of the WCAG 2.1 A/AA rules on the page as it is (of
    those `rules` only, when given)."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        # Through the DevTools protocol, which the page's Content-Security-Policy does not govern.
        page.evaluate(AXE.read_text() + "\n;0")
    only = {"type": "rule", "values": rules} if rules else {"type": "tag", "values": WCAG_21_AA}
    results = page.evaluate("only => axe.run(document, {runOnly: only, resultTypes: ['violations']})", only)
    return [violation for violation in results["violations"] if violation["impact"] in FAILING]


def describe(where: str, violation: dict[str, Any]) -> str:
    nodes = violation["nodes"]
    lines = [f"{where}: {violation['impact']} {violation['id']} ({len(nodes)}x): {violation['help']}"]
    for node in nodes[:4]:
        summary = " ".join((node.get("failureSummary") or "").split())
        lines.append(f"    {' '.join(map(str, node['target']))}: {summary[:240]}")
    return "\n".join(lines)


def check(page: Any, base: str, name: str, path: str | None, found: list[str]) -> None:
    """Load the page (None: the one on screen) and run axe at each size in each theme: the
    layout and the theme follow media queries, so resizing and emulating need no reload."""
    if path is not None:
        page.goto(base + path)
        settle(page, path)
    if path != "/api/docs/":  # Swagger UI's own page: docs/accessibility.md
        # Beyond axe's WCAG rules (these two are its best practices): a skip link first, one h1.
        first = page.evaluate("document.querySelector('a[href], button')?.className")
        headings = page.evaluate("document.querySelectorAll('h1').length")
        if first != "skip-link" or headings != 1:
            found.append(f"{name} {path or ''}: first control {first!r}, {headings} h1 (want skip-link, 1)")
    for size, (width, height) in SIZES.items():
        page.set_viewport_size({"width": width, "height": height})
        for theme in THEMES:
            page.emulate_media(color_scheme=theme)
            colours_only = theme != THEMES[0] and path != "/api/docs/"
            for violation in axe_violations(page, COLOUR_RULES if colours_only else None):
                found.append(describe(f"{name} [{size}, {theme}] {path or ''}", violation))


def test_every_page_meets_wcag_21_aa_at_both_sizes_in_both_themes(
    browser_page: Any, live_server: Any, demo: dict[str, int]
) -> None:
    page = browser_page
    found: list[str] = []
    page.goto(live_server.url + "/accounts/login/")
    check(page, live_server.url, "login", None, found)
    log_in_demo(page, live_server.url, "demo-coordinator")
    for name, path in coordinator_pages(demo):
        check(page, live_server.url, name, path, found)
    page.set_viewport_size({"width": 1400, "height": 900})
    page.click("text=Log out")
    log_in_demo(page, live_server.url, "demo-assessor")
    for name, path in assessor_pages(demo):
        check(page, live_server.url, name, path, found)
    assert not found, f"{len(found)} critical or serious axe violations:\n" + "\n".join(found)


def dark_theme_properties(css: str) -> set[str]:
    """The properties set inside the stylesheet's `prefers-color-scheme: dark` blocks, custom
    properties (`--name`) aside: they only name values the colour properties use."""
    found: set[str] = set()
    for block in re.finditer(r"@media \(prefers-color-scheme: dark\) \{(.*?)\n\}", css, re.S):
        rules = re.sub(r"/\*.*?\*/", "", block.group(1), flags=re.S)
        for declaration in re.findall(r"([-a-z]+)\s*:[^;{}]*;", rules):
            if not declaration.startswith("--"):
                found.add(declaration)
    return found


def test_the_app_s_dark_theme_changes_colours_only() -> None:
    stylesheets = [css for css in sorted(STATIC.rglob("*.css")) if css != API_DOCS_CSS]
    properties = {css.name: dark_theme_properties(css.read_text()) for css in stylesheets}
    assert {"background", "color"} <= properties["app.css"], "the dark block was found"
    beyond = {name: sorted(found - COLOUR_PROPERTIES) for name, found in properties.items()}
    assert not any(beyond.values()), beyond
    assert "margin" in dark_theme_properties(API_DOCS_CSS.read_text()), "the API docs are checked in full"


# The first answer button of each mode's judge page (side by side starts with a single document).
FIRST_ANSWER = "#grades button, #answers button:not([hidden]):not(#skip-button) >> visible=true"


def focused(page: Any) -> str:
    """The focused element as `tag#id`, `body` when nothing has the focus."""
    return page.evaluate("(e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : ''))(document.activeElement)")


def announced(page: Any) -> str:
    return page.evaluate("document.getElementById('announcer').textContent").strip()


def wait_ready(page: Any, task: str = "") -> None:
    """Until an item other than `task` is on screen with its answers enabled, or the empty state."""
    page.wait_for_function(
        """previous => {
            if (!document.getElementById('empty').hidden) return true;
            const item = document.getElementById('item');
            const button = document.querySelector('#grades button, #answers button');
            const task = item.dataset.task || document.getElementById('topic-title').textContent +
                document.getElementById('announcer').textContent;
            return !item.hidden && !button.disabled && task !== previous;
        }""",
        arg=task,
    )


def current(page: Any) -> str:
    """What tells the item on screen apart: its task id, else its topic and announcement."""
    return page.evaluate(
        "document.getElementById('item').dataset.task || "
        "document.getElementById('topic-title').textContent + "
        "document.getElementById('announcer').textContent"
    )


def judge_by_keyboard(page: Any, base: str, campaign_id: int) -> None:
    """Answer, undo, pause, help and skip on one judge page, checking the focus and the live region."""
    page.goto(f"{base}/judge/{campaign_id}/")
    wait_ready(page)
    topic = page.locator("#topic-title").inner_text()
    assert announced(page).startswith("Topic ") and topic in announced(page), announced(page)

    # Space on a focused answer button answers (it does not pause); the next item takes the focus.
    page.locator(FIRST_ANSWER).first.focus()
    before = current(page)
    page.keyboard.press("Space")
    wait_ready(page, before)
    assert page.locator("#pause-button").get_attribute("aria-pressed") == "false", "Space paused"
    page.wait_for_function("document.getElementById('toast').textContent.startsWith('Saved')")
    assert focused(page) == "h2#topic-title", focused(page)
    assert announced(page).startswith("Topic "), announced(page)

    # Undo brings the item back, says so, and focuses it.
    before = current(page)
    page.keyboard.press("u")
    page.wait_for_function("document.getElementById('announcer').textContent.startsWith('Undone.')")
    assert focused(page) == "h2#topic-title", focused(page)

    # Pause and resume are said.
    page.keyboard.press("p")
    assert announced(page).startswith("Paused"), announced(page)
    page.keyboard.press("p")
    assert announced(page) == "Resumed."

    # The help dialog takes the focus, keeps Tab inside and gives the focus back on Esc.
    page.locator("#help-button").focus()
    page.keyboard.press("Enter")
    assert focused(page) == "h2#help-title"
    for _ in range(4):
        page.keyboard.press("Tab")
        inside = page.evaluate("document.getElementById('help').contains(document.activeElement)")
        assert inside, f"Tab left the help for {focused(page)}"
    page.keyboard.press("Escape")
    assert page.locator("#help").is_hidden()
    assert focused(page) == "button#help-button", focused(page)

    # A skip (S, a reason, Enter) is said and the next item (or the empty state) takes the focus.
    before = current(page)
    page.keyboard.press("s")
    page.locator("#skip-form").wait_for(state="visible")
    page.keyboard.press("1")
    page.keyboard.press("Enter")
    page.wait_for_function("document.getElementById('announcer').textContent.startsWith('Skipped.')")
    assert focused(page) in {"h2#topic-title", "h2#empty-title"}, focused(page)


def test_every_judge_page_works_by_keyboard_and_tells_a_screen_reader(
    browser_page: Any, live_server: Any, demo: dict[str, int]
) -> None:
    page = browser_page
    log_in_demo(page, live_server.url, "demo-assessor")
    for mode in ("graded", "pairwise", "topk", "sxs"):
        try:
            judge_by_keyboard(page, live_server.url, demo[mode])
        except AssertionError as error:
            raise AssertionError(f"{mode}: {error}") from error
