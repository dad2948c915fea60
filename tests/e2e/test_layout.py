"""Every page of the generated demo at a phone's and a laptop's size: nothing wider than the
window, the answer buttons of each judge page in view without scrolling, and a dark theme when
the system asks for one. Screenshots go to $E2E_SCREENSHOT_DIR (docs/screenshots/ in the
README were made this way)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from graded.demo import DEMO_CAMPAIGN
from labeling.models import Campaign
from pairwise.demo import DEMO_TOPK_CAMPAIGN
from sxs.demo import DEMO_SXS_CAMPAIGN
from tests.e2e.helpers import log_in_demo

SIZES = {"phone": (390, 844), "desktop": (1400, 900)}
# The first answer control of each judging mode's page.
ANSWER_BUTTON = "#grades button, #answers button"


@pytest.fixture
def demo(demo_loaded: None) -> dict[str, int]:
    return {
        mode: Campaign.objects.get(name=name).pk
        for mode, name in (
            ("graded", DEMO_CAMPAIGN),
            ("topk", DEMO_TOPK_CAMPAIGN),
            ("sxs", DEMO_SXS_CAMPAIGN),
        )
    }


def _overflow(page: Any) -> int:
    return page.evaluate("document.documentElement.scrollWidth - window.innerWidth")


@pytest.mark.parametrize("size", SIZES)
def test_no_page_is_wider_than_the_window_and_answers_are_in_view(
    browser_page: Any, live_server: Any, demo: dict[str, int], size: str, screenshot_dir: Path
) -> None:
    page = browser_page
    width, height = SIZES[size]
    page.set_viewport_size({"width": width, "height": height})
    log_in_demo(page, live_server.url, "demo-coordinator")
    for name, path in [("campaigns", "/campaigns/")] + [
        (f"{mode}-{what}", f"/campaigns/{pk}/{suffix}")
        for mode, pk in demo.items()
        for what, suffix in (("campaign", ""), ("dashboard", "dashboard/"))
    ]:
        page.goto(live_server.url + path)
        page.wait_for_load_state("networkidle")
        assert _overflow(page) <= 0, f"{path} is {_overflow(page)} px wider than a {width} px window"
        page.screenshot(path=str(screenshot_dir / f"{size}-{name}.png"))
    page.click("text=Log out")
    log_in_demo(page, live_server.url, "demo-assessor")
    for mode, pk in demo.items():
        page.goto(f"{live_server.url}/judge/{pk}/")
        page.locator("#item").wait_for(state="visible")
        button = page.locator(f"{ANSWER_BUTTON} >> visible=true").first
        button.wait_for(state="visible")
        box = button.bounding_box()
        assert box is not None and box["y"] + box["height"] <= height, f"{mode}: answers below the fold"
        assert _overflow(page) <= 0, f"the {mode} judge page is wider than the window"
        page.screenshot(path=str(screenshot_dir / f"{size}-{mode}-judge.png"))


def test_the_dark_theme_follows_the_system(browser_page: Any, live_server: Any, demo: dict[str, int]) -> None:
    page = browser_page
    log_in_demo(page, live_server.url, "demo-assessor")
    light = page.evaluate("getComputedStyle(document.body).backgroundColor")
    page.emulate_media(color_scheme="dark")
    dark = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert light != dark
    red, green, blue = (int(part) for part in dark[dark.index("(") + 1 : -1].split(",")[:3])
    assert red + green + blue < 150, dark


def test_dashboards_print_24_hour_times_as_every_other_page(
    browser_page: Any, live_server: Any, demo: dict[str, int]
) -> None:
    import re

    page = browser_page
    log_in_demo(page, live_server.url, "demo-coordinator")
    page.goto(f"{live_server.url}/campaigns/{demo['graded']}/dashboard/")
    page.wait_for_function("document.getElementById('updated').textContent.startsWith('updated')")
    updated = page.locator("#updated").inner_text()
    assert re.search(r"\b\d{2}:\d{2}:\d{2}\b", updated) and not re.search(r"\b[AP]M\b", updated), updated
    page.wait_for_function("document.body.innerText.includes('Last refit')")
    body = page.locator("body").inner_text()
    refit = body[body.index("Last refit") :][:80]
    assert re.search(r"\d{2}:\d{2}:\d{2}", refit) and not re.search(r"\b[AP]M\b", refit), refit


def test_the_new_campaign_form_shows_the_fields_of_the_chosen_mode(
    browser_page: Any, live_server: Any, demo: dict[str, int], screenshot_dir: Path
) -> None:
    page = browser_page
    log_in_demo(page, live_server.url, "demo-coordinator")
    page.goto(f"{live_server.url}/campaigns/new/")
    mode = page.locator("#id_judging_mode")
    judging, metric = mode.bounding_box(), page.locator("#id_metric").bounding_box()
    assert judging is not None and metric is not None and judging["y"] < metric["y"], "the mode comes first"
    shown = {
        "graded": {"metric", "goal", "strategy", "grades"},
        "pairwise": set(),
        "topk": {"topk_k"},
        "sxs": {"metric", "grades"},
        "training": {"grades"},
    }
    every = {"metric", "goal", "goal_k", "strategy", "grades", "topk_k"}
    for name, fields in shown.items():
        mode.select_option(name)
        visible = {field for field in every if page.locator(f"#id_{field}").is_visible()}
        assert visible - {"goal_k"} == fields, name
        assert page.locator("#id_budget").is_visible() and page.locator("#id_overlap").is_visible()
    page.screenshot(path=str(screenshot_dir / "new-campaign-training.png"))
    # A top-k campaign made with the form takes its k; the hidden graded fields keep their defaults.
    mode.select_option("topk")
    page.fill("#id_name", "five best")
    page.fill("#id_topk_k", "5")
    page.click("button:has-text('Create campaign')")
    page.wait_for_url(re.compile(r".*/campaigns/\d+/$"))
    created = Campaign.objects.get(name="five best")
    assert created.judging_mode == "topk"
    from labeling.modes import mode_of

    assert mode_of(created).settings_of(created)["k"] == 5
