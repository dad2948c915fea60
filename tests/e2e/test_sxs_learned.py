"""End to end in headless chromium: an SxS campaign answered by a deterministic oracle is refitted;
the dashboard draws the learned gains and the leaderboard from the API, and "Use these gains and
discounts in campaign…" changes a graded campaign's metric."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import AbstractBaseUser

from labeling.services.campaigns import campaign_create
from sxs import services
from sxs.models import SxsFit
from sxs.selectors import learned_dcg_summary
from tests.e2e.helpers import log_in
from tests.sxs.oracle import LEARN_SYSTEMS, answer_by_oracle, make_learning_campaign

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def percent(fraction: float) -> str:
    """static/labeling/charts.js `percent` (toFixed rounds an exact half up, as Decimal does here)."""
    if 0.999 < fraction < 1:
        return "> 99.9 %"
    step = Decimal("0.1") if fraction >= 0.995 or fraction < 0.1 else Decimal("1")
    return f"{Decimal(100 * fraction).quantize(step, rounding=ROUND_HALF_UP)} %"


WARNING = (
    "C = 1000 sits at the high edge of its grid (0.1, 1, 10, 100, 1000) even after extending it once: "
    "a larger value might fit better; widen the grid"
)
COVERAGE = {"sentence": "The intervals covered 93 % of 200 simulated truths.", "shortfall": 0.02}


def test_the_dashboard_shows_the_learned_dcg_and_applies_it_to_another_campaign(
    browser_page: Any,
    live_server: Any,
    people: dict[str, AbstractBaseUser],
    screenshot_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("sxs.services.learning.BOOTSTRAP", 20)  # intervals exist; the page is the test
    campaign = make_learning_campaign(people["coordinator"], ["alice"], name="Lists side by side")
    assert answer_by_oracle(campaign, people["assessor"]) == 40
    fit = services.sxs_refit(campaign=campaign)
    # A grid warning and a coverage sentence, as a fit may carry them.
    SxsFit.objects.filter(pk=fit.pk).update(
        result={**fit.result, "grid_warnings": [WARNING], "coverage": COVERAGE, "widened": ["g1"]}
    )
    expected = learned_dcg_summary(campaign)
    assert expected["status"] == "fitted"
    target = campaign_create(
        creator=people["coordinator"],
        name="Graded at 3",
        metric="DCG@3",
        grades=["Bad", "Fair", "Good"],
        budget=10,
    )

    page = browser_page
    page.set_viewport_size({"width": 1360, "height": 1000})
    log_in(page, live_server.url, "carl", f"/campaigns/{target.pk}/")
    label_before = page.locator("body").inner_text()
    assert "custom gains" not in label_before

    page.goto(f"{live_server.url}/campaigns/{campaign.pk}/dashboard/")
    page.wait_for_selector("#learned-dcg-body:not([hidden])")
    page.wait_for_selector("#learned-gains-chart .series-learned text.value")
    shown_gains = [
        float(t) for t in page.locator("#learned-gains-chart .series-learned text.value").all_text_contents()
    ]
    assert shown_gains == pytest.approx(expected["gains"], abs=2e-3)
    # Three series (learned, 2^y - 1, y) and the interval bars of the learned one.
    assert page.locator("#learned-gains-chart polyline").count() == 3
    assert page.locator("#learned-gains-chart .series-learned line.interval").count() >= 1
    assert page.locator("#learned-heatmap rect").count() == 9
    assert "σ₂/σ₁ = " in page.locator("#learned-sigma").inner_text()
    assert "close to 0" not in page.locator("#learned-sigma").inner_text()
    assert page.locator("#learned-form-test").inner_text() == expected["form_test"]["sentence"]

    # Which fit, its warning in an alert box, the accuracies under their names, the intervals.
    method = page.locator("#learned-fit-method").inner_text()
    assert method.startswith("Fitted by the likelihood of the five answers") and "C = " in method
    warnings = page.locator("#learned-fit-warnings")
    assert warnings.is_visible() and warnings.get_attribute("role") == "alert"
    assert warnings.locator("li").all_inner_texts() == [WARNING]
    accuracy = page.locator("#learned-accuracy tbody tr")
    assert [row.get_attribute("data-accuracy") for row in accuracy.all()] == [
        "learned", "learned_full_w", "learned_best_of_grid", "exp", "linear"
    ]  # fmt: skip
    best_of_grid = page.locator('#learned-accuracy tr[data-accuracy="learned_best_of_grid"]')
    assert "optimistic" in best_of_grid.inner_text()
    assert page.locator('#learned-accuracy tr[data-accuracy="learned"] td').nth(1).inner_text() == percent(
        expected["accuracy"]["learned"]
    )
    assert expected["interval_method"] in page.locator("#learned-interval-method").inner_text()
    assert "g1" in page.locator("#learned-widened").inner_text()
    assert page.locator("#learned-coverage").inner_text() == COVERAGE["sentence"]

    rows = page.locator("#learned-leaderboard tbody tr")
    assert rows.count() == len(LEARN_SYSTEMS)
    for row in expected["leaderboard"]:
        cells = page.locator(f'#learned-leaderboard tr[data-system="{row["system"]}"] td').all_inner_texts()
        assert float(cells[1]) == pytest.approx(row["learned_dcg"], rel=2e-3, abs=1e-3)
        assert int(cells[2]) == row["rank_learned_dcg"] and int(cells[4]) == row["rank_standard"]
        assert float(cells[3]) == pytest.approx(row["standard"], rel=2e-3, abs=1e-3)
        assert float(cells[5]) == pytest.approx(row["utility"], rel=2e-3, abs=1e-3)
        assert int(cells[6]) == row["rank_utility"]
    tau = page.locator("#learned-tau").inner_text()
    assert "Kendall's τ against standard DCG: learned DCG" in tau and "learned utility (full W)" in tau

    # The diagnostics: a bar per metric and bin, the same numbers in the table, two strengths.
    bins = expected["diagnostics"]["by_difference"]
    assert page.locator("#learned-by-difference-chart rect.bar").count() == 3 * len(bins)
    assert page.locator("#learned-by-difference tbody tr").count() == len(bins)
    first = page.locator("#learned-by-difference tbody tr").first.locator("td").all_inner_texts()
    assert int(first[1]) == bins[0]["answers"]
    assert first[2] == percent(bins[0]["accuracy"]["learned_dcg"])
    strengths = page.locator("#learned-by-strength tbody tr td:first-child").all_inner_texts()
    assert strengths == ["much better", "better"]
    assert (
        "Held out: each answer scored by a fit that did not see its topic"
        in page.locator("#learned-diagnostics-note").inner_text()
    )
    assert page.locator("#learned-tie-curve-box").is_hidden() == (not expected["tie_curve"])
    page.locator("#learned-dcg").screenshot(path=str(screenshot_dir / "sxs-learned-dcg.png"))

    page.select_option("#learned-apply-target", str(target.pk))
    page.click("#learned-apply button[type=submit]")
    page.wait_for_selector("#learned-apply-link")
    assert "DCG@3 with custom gains" in page.locator("#learned-apply-result").inner_text()
    page.click("#learned-apply-link")
    page.wait_for_load_state()
    text = page.locator("body").inner_text()
    assert (
        "DCG@3 with custom gains" in text
        and "learned from side-by-side campaign 'Lists side by side'" in text
    )
    page.screenshot(path=str(screenshot_dir / "sxs-learned-applied.png"))
    target.refresh_from_db()
    assert target.custom_dcg["gains"] == [round(g, 4) + 0.0 for g in expected["gains"]]
