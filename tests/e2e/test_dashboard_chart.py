"""End to end in headless chromium: the history chart stays readable. With many runs it starts
with the compared pair (the legend shows or hides the others); one wild estimate after a single
draw neither stretches the axis nor hides the others (it is drawn at the edge); an estimate
outside its own interval (cut to the metric's range) is marked and explained in the table, whose
numbers share one number of decimals per metric, and so is an arrival's difference."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone

from labeling.models import Arrival, Campaign, System, Verdict
from labeling.services.campaigns import campaign_create, campaign_start
from sampling import arrival_summary
from sampling.estimates import estimates_fingerprint
from sampling.models import EstimateSnapshot
from sampling.verdicts import EXACT_REASON
from tests.e2e.helpers import log_in
from uploads.run_imports import runs_import

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

SYSTEMS = [f"run{index}" for index in range(1, 9)]


def _row(name: str, value: float, low: float, high: float, reliable: bool = True) -> dict[str, Any]:
    return {"name": name, "metric": "DCG@5", "value": value, "se": 1.0, "low": low, "high": high, "n": 3,
            "reliable": reliable, "interval": "t" if reliable else "any_n"}  # fmt: skip


def _compared_campaign(people: dict[str, AbstractBaseUser], name: str, systems: list[str]) -> Campaign:
    """A running campaign comparing run3 and run5 among `systems`, a budget of 40 judgments."""
    campaign = campaign_create(
        creator=people["coordinator"], name=name, metric="DCG@5", grades=["Not", "Relevant", "Highly"],
        goal="difference", focus_systems=["run3", "run5"], budget=40, budget_unit="judgments",
    )  # fmt: skip
    runs = [
        (f"{system}.run", io.BytesIO("".join(f"{q} Q0 d{q}-{(d + i) % 6} {d + 1} {9 - d} {system}\n"
                                             for q in (1, 2) for d in range(5)).encode()))
        for i, system in enumerate(systems)
    ]  # fmt: skip
    runs_import(campaign=campaign, files=runs)
    return campaign_start(campaign=campaign)


@pytest.fixture
def crowded_campaign(people: dict[str, AbstractBaseUser]) -> Campaign:
    """Eight runs, "Compare two systems" of run3 and run5, and two stored snapshots: after one
    draw run1 is estimated at -203.07 (interval cut to [0, 5.868]), later every run lies in 1-4
    and run2's estimate -0.299 sits below its cut interval [0, 5.868]."""
    campaign = _compared_campaign(people, "Crowded", SYSTEMS)
    # run1's first interval is from too few topics (any-n bounds, the whole range): not drawn.
    first = [
        _row("run1", -203.07, 0.0, 31.8, reliable=False),
        *(_row(name, 2.0, 1.0, 3.0) for name in SYSTEMS[1:]),
    ]
    later = [
        _row(name, 1.0 + index * 0.4, 0.5 + index * 0.4, 1.5 + index * 0.4)
        for index, name in enumerate(SYSTEMS)
    ]
    later[1] = _row("run2", -0.299, 0.0, 5.868)
    # run8 arrived, compared with run1: its stored difference lies beyond its interval, cut to
    # the difference's range (a small top-up's unbiased estimate can).
    arrival = Arrival.objects.create(
        campaign=campaign, system=System.objects.get(campaign=campaign, name="run8"),
        reference=System.objects.get(campaign=campaign, name="run1"), topup_budget=5, drawable_after=0,
    )  # fmt: skip
    report = arrival_summary(arrival)
    report["difference"] = {"value": 6.2, "se": 1.0, "low": 1.0, "high": 5.868, "reliable": True}
    Arrival.objects.filter(pk=arrival.pk).update(report=report, report_at=timezone.now())
    # run7 arrived too, and every document its difference weighs is judged: it has an exact value.
    judged = Arrival.objects.create(
        campaign=campaign, system=System.objects.get(campaign=campaign, name="run7"),
        reference=System.objects.get(campaign=campaign, name="run1"), topup_budget=5, drawable_after=0,
    )  # fmt: skip
    report = arrival_summary(judged)
    report["difference"] = {"value": -1.63, "se": 0.4, "low": -2.41, "high": -0.85, "reliable": True}
    Arrival.objects.filter(pk=judged.pk).update(report=report, report_at=timezone.now())
    Verdict.objects.create(
        campaign=campaign, arrival=judged, first="run7", second="run1", rule="fixed", horizon=5,
        outcome="worse", value=-1.432, low=-1.432, high=-1.432,
        reason=f"{EXACT_REASON}: it is exactly -1.432", decided_at=timezone.now(),
    )  # fmt: skip
    for spent, rows, fingerprint in ((1, first, "old"), (6, later, estimates_fingerprint(campaign))):
        EstimateSnapshot.objects.create(
            campaign=campaign, fingerprint=fingerprint, level="query", spent=spent, budget=40,
            judgments=spent, draws=spent, data={"systems": rows, "difference": None, "exact": None},
        )  # fmt: skip
    return campaign


def test_the_history_chart_stays_readable(
    browser_page: Any, live_server: Any, crowded_campaign: Campaign, people: dict[str, AbstractBaseUser]
) -> None:
    page = browser_page
    log_in(page, live_server.url, "carl", f"/campaigns/{crowded_campaign.pk}/dashboard/")
    legend = page.locator("#history-legend")
    legend.locator("button.legend-item").first.wait_for(state="visible", timeout=30_000)
    assert legend.locator("button.legend-item").count() == len(SYSTEMS)
    pressed = legend.locator("button.legend-item[aria-pressed=true]")
    assert sorted(pressed.all_inner_texts()) == ["run3", "run5"]
    assert "Showing 2 of 8 systems" in legend.inner_text()
    chart = page.locator("#history-chart")
    assert chart.locator("g.series").count() == 2

    # run1's -203.07 is shown once run1 is: at the edge, and the axis keeps the intervals' span.
    legend.locator("button[data-system=run1]").click()
    page.wait_for_function(
        "document.querySelectorAll('#history-chart g.series').length === 3", timeout=30_000
    )
    assert chart.get_attribute("data-beyond") == "1"
    # One bar (three lines) per snapshot with a trusted interval: only the later one for run1.
    assert chart.locator('g.series[data-system="run1"] g line').count() == 3
    texts = page.evaluate(
        "[...document.querySelectorAll('#history-chart text.tick')].map(t => t.textContent)"
    )
    ticks = [float(text.replace(",", "")) for text in texts if text.strip() not in ("", "budget")]
    assert min(ticks) > -10, ticks
    assert "beyond the axis" in (chart.locator(".beyond-axis title").first.text_content() or "")

    # The table marks the estimate below its cut interval and says why.
    cell = page.locator("#estimates-table tr[data-system=run2] [data-field=value]")
    assert cell.inner_text() == "-0.299 †" and cell.get_attribute("data-outside") == "1"
    assert "lies outside its interval" in page.locator("#estimates-note").inner_text()
    # So do the arrivals' differences.
    arrived = page.locator("#arrivals tr[data-arrival=run8] [data-field=difference]")
    assert arrived.inner_text() == "6.200 †" and arrived.get_attribute("data-outside") == "1"
    assert "lies outside its interval" in page.locator("#arrivals-outside-note").inner_text()
    # run8 has no verdict record, so no plan to name: no empty brackets.
    verdict = page.locator("#arrivals tr[data-arrival=run8] [data-field=verdict]").inner_text()
    assert verdict.startswith("not yet") and "()" not in verdict, verdict
    # An exact difference leads its row; the sample's estimate and interval stay, named as such.
    exact = page.locator("#arrivals tr[data-arrival=run7]")
    assert exact.locator("[data-field=difference]").inner_text() == "-1.432 exact"
    assert exact.locator("[data-field=interval]").inner_text() == "the sample's: -1.630 [-2.410, -0.850]"
    assert exact.locator("[data-field=order-right]").inner_text() == "exact"
    # One metric's numbers carry one number of decimals (they ranged over -0.07134, 14.7, 20.31).
    cells = page.locator("#estimates-table tr[data-system] td.num").all_inner_texts()
    numbers = re.findall(r"-?\d+\.?\d*", " ".join(cells))
    assert numbers and {len(number.split(".")[1]) for number in numbers if "." in number} == {3}, cells


def test_the_table_shows_the_intervals_and_words_of_the_estimates_level(
    browser_page: Any, live_server: Any, people: dict[str, AbstractBaseUser]
) -> None:
    """The level says which intervals its rows carry and what they mean (the page asks it)."""
    campaign = campaign_create(
        creator=people["coordinator"], name="Items", metric="DCG@5", grades=["Not", "Relevant", "Highly"],
        strategy="items", budget=40, budget_unit="judgments",
    )  # fmt: skip
    runs = [
        (f"{name}.run", io.BytesIO("".join(f"{q} Q0 d{q}-{d} {d + 1} {9 - d} {name}\n" for q in (1, 2)
                                           for d in range(5)).encode()))
        for name in ("run1", "run2")
    ]  # fmt: skip
    runs_import(campaign=campaign, files=runs)
    campaign = campaign_start(campaign=campaign)
    row = {**_row("run1", 2.0, 1.0, 3.0), "intervals": {"hoeffding": [0.25, 3.75], "bernstein": [0.5, 3.5]}}
    EstimateSnapshot.objects.create(
        campaign=campaign, fingerprint=estimates_fingerprint(campaign), level="item", spent=1, budget=40,
        judgments=1, draws=1, data={"systems": [row], "difference": None, "exact": None},
    )  # fmt: skip
    page = browser_page
    log_in(page, live_server.url, "carl", f"/campaigns/{campaign.pk}/dashboard/")
    cells = page.locator("#estimates-table tr[data-system=run1] td")
    cells.first.wait_for(state="visible", timeout=30_000)
    headers = page.locator("#estimates-table thead th").all_text_contents()
    assert headers[3:6] == ["95 % CI (CLT)", "Hoeffding", "Emp. Bernstein"], headers
    assert "3.75" in cells.nth(4).inner_text() and "3.50" in cells.nth(5).inner_text()
    assert page.locator("#estimates-note").inner_text().startswith("Item-level importance sampling")


@pytest.fixture
def six_run_campaign(people: dict[str, AbstractBaseUser]) -> Campaign:
    """Six runs compared as run3 - run5, with snapshots at 20 and at the whole budget of 40."""
    names = SYSTEMS[:6]
    campaign = _compared_campaign(people, "Six", names)
    for spent, fingerprint in ((20, "old"), (40, estimates_fingerprint(campaign))):
        rows = [
            _row(name, 2.0 + 0.1 * index, 1.0 + 0.1 * index, 3.0 + 0.1 * index)
            for index, name in enumerate(names)
        ]
        EstimateSnapshot.objects.create(
            campaign=campaign, fingerprint=fingerprint, level="query", spent=spent, budget=40,
            judgments=spent, draws=spent, data={"systems": rows, "difference": None, "exact": None},
        )  # fmt: skip
    return campaign


def test_six_runs_start_with_the_compared_pair_and_nothing_lies_past_the_budget(
    browser_page: Any, live_server: Any, six_run_campaign: Campaign
) -> None:
    page = browser_page
    log_in(page, live_server.url, "carl", f"/campaigns/{six_run_campaign.pk}/dashboard/")
    legend = page.locator("#history-legend")
    legend.locator("button.legend-item").first.wait_for(state="visible", timeout=30_000)
    assert sorted(legend.locator("button.legend-item[aria-pressed=true]").all_inner_texts()) == [
        "run3",
        "run5",
    ]
    chart = page.locator("#history-chart")
    assert chart.locator("g.series").count() == 2 and chart.locator("g.series polygon").count() == 2
    for name in ("run1", "run2", "run4", "run6"):
        legend.locator(f"button[data-system={name}]").click()
    page.wait_for_function(
        "document.querySelectorAll('#history-chart g.series').length === 6", timeout=30_000
    )
    # Six series: bars, no bands hiding each other, and said so.
    assert chart.locator("g.series polygon:not(.beyond-axis)").count() == 0
    assert "drawn as bars, not bands" in legend.inner_text()
    budget_x = float(chart.locator(".budget-line").get_attribute("x1") or "nan")
    drawn_x = page.evaluate(
        """[...document.querySelectorAll('#history-chart g.series circle, #history-chart g.series g line')]
           .map(mark => Number(mark.getAttribute(mark.tagName === 'circle' ? 'cx' : 'x1')))"""
    )
    assert len(drawn_x) >= 6 * 2 and max(drawn_x) <= budget_x + 0.01, (max(drawn_x), budget_x)
