"""A phone (390 x 844) in headless chromium: the campaign list as cards with labels beside their
fields, both documents of a top-k pair readable with the answers in view, skip and note on the
single documents of a side-by-side campaign, and learned discounts drawn on a readable axis
when few answers make their intervals wide."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import AbstractBaseUser

from graded.demo import DEMO_CAMPAIGN
from labeling.models import Campaign, Judgment, Skip
from pairwise.demo import DEMO_TOPK_CAMPAIGN
from sxs import services as sxs_services
from sxs.demo import DEMO_SXS_CAMPAIGN
from sxs.selectors import learned_dcg_summary
from tests.e2e.helpers import log_in, log_in_demo
from tests.sxs.oracle import answer_by_oracle, make_learning_campaign

PHONE = {"width": 390, "height": 844}


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


@pytest.fixture
def demo(demo_loaded: None) -> dict[str, int]:
    return {
        "topk": Campaign.objects.get(name=DEMO_TOPK_CAMPAIGN).pk,
        "sxs": Campaign.objects.get(name=DEMO_SXS_CAMPAIGN).pk,
    }


def _box(page: Any, selector: str) -> dict[str, float]:
    box = page.locator(selector).first.bounding_box()
    assert box is not None, f"{selector} is not on screen"
    return box


def _judge_on_a_phone(page: Any, base: str, campaign_id: int) -> None:
    """demo-assessor's judge page of the campaign, at a phone's size, with its first item shown."""
    page.set_viewport_size(PHONE)
    log_in_demo(page, base, "demo-assessor")
    page.goto(f"{base}/judge/{campaign_id}/")
    page.locator("#item").wait_for(state="visible")


def test_the_campaign_list_is_cards_on_a_phone_with_labels_at_their_fields(
    browser_page: Any, live_server: Any, demo: dict[str, int], screenshot_dir: Path
) -> None:
    page = browser_page
    page.set_viewport_size(PHONE)
    log_in_demo(page, live_server.url, "demo-coordinator")
    page.goto(f"{live_server.url}/campaigns/")
    scroll = page.evaluate(
        "(() => { const s = document.querySelector('.table-scroll');"
        " return s.scrollWidth - s.clientWidth; })()"
    )
    assert scroll <= 0, f"the campaign list scrolls {scroll} px sideways"
    first_card = _box(page, ".campaign-list tbody tr")
    assert first_card["width"] <= PHONE["width"]
    actions = _box(page, ".campaign-list tbody tr td.actions")
    assert actions["x"] + actions["width"] <= PHONE["width"], "the actions fit without scrolling"
    for label, field in (
        ("label[for=campaign-status]", "#campaign-status"),
        ("label[for=campaign-search]", "#campaign-search"),
    ):
        above, below = _box(page, label), _box(page, field)
        assert abs(above["x"] - below["x"]) < 2 and 0 <= below["y"] - (above["y"] + above["height"]) < 8, (
            label
        )
    page.screenshot(path=str(screenshot_dir / "phone-campaigns.png"))


def test_a_top_k_pair_is_readable_on_a_phone_one_document_at_a_time(
    browser_page: Any, live_server: Any, demo: dict[str, int], screenshot_dir: Path
) -> None:
    page = browser_page
    _judge_on_a_phone(page, live_server.url, demo["topk"])
    assert page.locator("#right-doc").is_hidden() and page.locator("#left-doc").is_visible()
    left = _box(page, "#left-doc")
    assert left["width"] > 0.85 * PHONE["width"], "one document the phone's width"
    page.locator("#left-body").scroll_into_view_if_needed()
    body, answers = _box(page, "#left-body"), _box(page, ".answers")
    assert answers["y"] + answers["height"] <= PHONE["height"] + 1, "the answers stay in view"
    # The text's first lines sit between the top of the window and the answers.
    assert 0 <= body["y"] and body["y"] + 40 < answers["y"]
    assert len(page.locator("#left-body").inner_text()) > 100
    page.screenshot(path=str(screenshot_dir / "phone-topk-left.png"))
    page.click(".side-switch button[data-side=right]")
    assert page.locator("#left-doc").is_hidden() and page.locator("#right-doc").is_visible()
    page.locator("#right-body").scroll_into_view_if_needed()
    right = _box(page, "#right-body")
    assert (
        right["y"] + 40 < _box(page, ".answers")["y"] and len(page.locator("#right-body").inner_text()) > 100
    )
    page.evaluate("window.scrollTo(0, 0)")
    page.keyboard.press("ArrowLeft")  # an answer: the next pair starts with the left document
    page.wait_for_function("document.querySelector('main.judge').dataset.side === 'left'")
    assert page.locator("#left-doc").is_visible()
    # The next pair of the same topic opens at its documents: text shows without scrolling.
    page.wait_for_timeout(100)
    body, answers = _box(page, "#left-body"), _box(page, ".answers")
    assert 0 <= body["y"] and body["y"] + 40 < answers["y"], (body, answers)
    page.screenshot(path=str(screenshot_dir / "phone-topk-next.png"))


def test_the_note_box_of_a_graded_item_opens_above_the_grade_bar_on_a_phone(
    browser_page: Any, live_server: Any, demo: dict[str, int], screenshot_dir: Path
) -> None:
    page = browser_page
    _judge_on_a_phone(page, live_server.url, Campaign.objects.get(name=DEMO_CAMPAIGN).pk)
    # Read to the end of the document, then tap Note: the box opens below the text.
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    page.click("#note-button")
    page.locator("#note").wait_for(state="visible")
    page.wait_for_timeout(100)
    note, bar = _box(page, "#note"), _box(page, ".judge .doc .grades")
    assert note["y"] >= 0 and note["y"] + note["height"] <= bar["y"], (note, bar)
    page.screenshot(path=str(screenshot_dir / "phone-graded-note.png"))


def test_a_single_document_of_a_side_by_side_campaign_takes_a_note_and_a_skip(
    browser_page: Any, live_server: Any, demo: dict[str, int], screenshot_dir: Path
) -> None:
    page = browser_page
    page.set_viewport_size(PHONE)
    log_in_demo(page, live_server.url, "demo-assessor")
    page.goto(f"{live_server.url}/judge/{demo['sxs']}/")
    page.wait_for_function("document.getElementById('item').dataset.kind === 'grade'")
    assert page.locator("#skip-button").is_enabled()
    assert page.locator("#comment-label").inner_text() == "Note on this grade (optional)"
    first = page.evaluate("document.getElementById('item').dataset.task")
    page.keyboard.press("s")
    page.locator("#skip-form").wait_for(state="visible")
    page.keyboard.press("2")
    page.keyboard.type("cannot tell")
    page.screenshot(path=str(screenshot_dir / "phone-sxs-skip.png"))
    page.keyboard.press("Enter")
    page.wait_for_function(f"document.getElementById('item').dataset.task !== '{first}'")
    skip = Skip.objects.get()
    assert (skip.kind, skip.unit, skip.reason, skip.note) == ("grade", int(first), "not_sure", "cannot tell")
    # N opens the note; the next grade carries it.
    page.wait_for_function("document.getElementById('item').dataset.kind === 'grade'")
    page.keyboard.press("n")
    page.keyboard.type("only the title fits")
    page.keyboard.press("Escape")
    page.keyboard.press("1")
    page.wait_for_function("document.getElementById('toast').textContent.startsWith('Saved')")
    assert Judgment.objects.get(assessor__username="demo-assessor").note == "only the title fits"


@pytest.mark.django_db(transaction=True)
def test_learned_discounts_from_few_answers_are_drawn_on_a_readable_axis(
    browser_page: Any, live_server: Any, people: dict[str, AbstractBaseUser], screenshot_dir: Path
) -> None:
    campaign = make_learning_campaign(people["coordinator"], ["alice"], name="Few answers")
    answer_by_oracle(campaign, people["assessor"], count=23)
    sxs_services.sxs_refit(campaign=campaign)
    page = browser_page
    page.set_viewport_size(PHONE)
    log_in(page, live_server.url, "carl", f"/campaigns/{campaign.pk}/dashboard/")
    summary = learned_dcg_summary(campaign)
    assert summary["status"] == "fitted", summary.get("status")
    page.wait_for_selector("#learned-discounts-chart .series-learned circle")
    # The axis follows the discounts, not whiskers that a few answers stretch far beyond them.
    ticks = [
        float(text)
        for text in page.locator(
            "#learned-discounts-chart text.tick:not(.value)[text-anchor=end]"  # the y axis
        ).all_text_contents()
        if _number(text)
    ]
    assert max(ticks) <= 1.5 * max(1.0, *summary["discounts"]), ticks
    cut = page.locator("#learned-discounts-chart .interval-cut").count()
    legend = page.locator("#learned-discounts-legend").inner_text()
    assert (cut > 0) == ("beyond the chart" in legend), legend
    page.locator("#learned-dcg").screenshot(path=str(screenshot_dir / "phone-sxs-learned-few.png"))
