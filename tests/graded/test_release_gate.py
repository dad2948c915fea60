"""The release pipeline's step end to end: `python -m clients.release_gate` (a separate process,
standard library only) submits a run to a running app with a scoped token (or a personal one), an
assessor judges the top-up, and the command exits with the verdict's code and prints the
difference with its interval."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import AbstractBaseUser
from rest_framework.authtoken.models import Token

from clients.release_gate import describe
from labeling.models import Arrival, Campaign, Judgment, Verdict
from labeling.services.campaigns import campaign_assessors_assign, campaign_create, campaign_start
from operations.scoped_tokens import scoped_token_create
from sampling.arrivals import arrival_report
from tests.conftest import REPO_ROOT, RUN_A, RUN_B, upload
from tests.graded.helpers import RUN_POOR, judge_all
from uploads.run_imports import runs_import

# Also on PostgreSQL (`make test` runs the marked modules again there): the gate against a live server.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgresql]


def _campaign(coordinator: AbstractBaseUser, **fields: Any) -> Campaign:
    campaign = campaign_create(
        creator=coordinator, name="release gate", metric="DCG@5", grades=["0", "1", "2"], budget=12, **fields
    )
    runs_import(campaign=campaign, files=[upload("a.run", RUN_A), upload("b.run", RUN_B)])
    return campaign


def _gate(
    live_server: Any, token: str, *arguments: str, module: str = "clients.release_gate"
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            module,
            "--url",
            live_server.url,
            "--allow-http",  # the test server is plain http on loopback
            "--token",
            token,
            *arguments,
        ],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize(("rule", "margin"), [("sequential", None), ("fixed", None), ("sequential", "0.5")])
def test_the_gate_submits_a_run_waits_for_its_verdict_and_exits_with_it(
    live_server: Any,
    coordinator: AbstractBaseUser,
    assessor: AbstractBaseUser,
    tmp_path: Path,
    rule: str,
    margin: str | None,
) -> None:
    campaign = _campaign(coordinator, strategy="items", verdict_rule=rule)
    campaign_assessors_assign(campaign=campaign, usernames=[assessor.get_username()])
    campaign = campaign_start(campaign=campaign)
    judge_all(campaign, assessor, recompute_each=False)
    run = tmp_path / "poor.run"
    run.write_text(RUN_POOR)
    # The pipeline's own credential: this campaign's arrivals only, for a day.
    token = scoped_token_create(
        campaign=campaign, creator=coordinator, name="release pipeline", scopes=["arrivals"], days=1
    ).secret
    budget = "200" if rule == "sequential" else "8"
    asked = ["--margin", margin] if margin is not None else []
    gate = _gate(
        live_server,
        token,
        "--campaign",
        str(campaign.pk),
        "--run",
        str(run),
        "--reference",
        "alpha",
        "--budget",
        budget,
        *asked,
        "--poll",
        "1",
        "--timeout",
        "120",
    )
    # The scripted assessor: judges whatever the top-up draws until the gate has its answer.
    deadline = time.monotonic() + 120
    while gate.poll() is None and time.monotonic() < deadline:
        if Arrival.objects.filter(campaign=campaign).exists():
            judge_all(campaign, assessor)
        time.sleep(0.2)
    output, errors = gate.communicate(timeout=30)
    arrival = Arrival.objects.get(campaign=campaign)
    verdict = Verdict.objects.get(arrival=arrival)
    codes = {"better": 0, "not_worse": 0, "worse": 1, "not_better": 1, "not_settled": 2, "unchanged": 5}
    assert verdict.outcome in codes, (output, errors)
    assert gate.returncode == codes[verdict.outcome], (output, errors)
    question = "non_inferiority" if margin else "difference"
    assert output.startswith(
        f"arrival {arrival.pk}: poor against alpha, top-up {budget}, verdict by the {rule} rule "
        f"({question}, margin {margin or 0})"
    ), output
    assert f"{verdict.outcome}: poor minus alpha = " in output and "95 % interval [" in output
    assert f"read by the {rule} rule" in output
    if margin:
        assert "not worse by 0.5" in output
        assert (verdict.question, verdict.margin) == ("non_inferiority", 0.5)
    if rule == "sequential":
        assert verdict.outcome == "worse" and verdict.returned > 0, "decided before the top-up was spent"
        assert f"at label {verdict.decided_labels}" in output
        assert f"horizon {verdict.horizon:.0f} labels" in output, "the campaign's unit (items: labels)"


def test_an_identical_release_exits_with_its_own_code_and_costs_nothing(
    live_server: Any, coordinator: AbstractBaseUser, assessor: AbstractBaseUser, tmp_path: Path
) -> None:
    # A fixed seed: which of alpha and beta is the best certified run depends on the draws, and
    # the release is alpha's copy (with a random seed, beta was taken now and then, the release
    # was not unchanged, and the gate waited for a top-up nobody judged).
    campaign = _campaign(coordinator, strategy="items", seed=1)
    campaign_assessors_assign(campaign=campaign, usernames=[assessor.get_username()])
    campaign = campaign_start(campaign=campaign)
    judge_all(campaign, assessor, recompute_each=False)
    run = tmp_path / "same.run"
    run.write_text(RUN_A.replace(" alpha\n", " release\n"))
    token = Token.objects.create(user=coordinator).key
    gate = _gate(
        live_server,
        token,
        "--campaign",
        str(campaign.pk),
        "--run",
        str(run),
        "--budget",
        "20",
        "--poll",
        "1",
        "--timeout",
        "100",
        module="labeling.release_gate",  # the old command keeps working
    )
    output, errors = gate.communicate(timeout=120)
    assert gate.returncode == 5, (output, errors)
    # The default reference, said as such: the best certified run (alpha or beta).
    assert "(the best certified run)" in output
    # Not "top-up 0" after --budget 20: the first line says why nothing is judged.
    assert output.splitlines()[0].endswith("the reference: nothing to judge"), output
    assert output.splitlines()[-1].startswith("unchanged: release minus")
    assert "horizon" not in output.splitlines()[-1], "no top-up, so no horizon to read over"
    assert Judgment.objects.filter(task__arrival__campaign=campaign).count() == 0
    # The reference itself: no order to be right about (it once said 50 %).
    arrival = Arrival.objects.get(campaign=campaign)
    assert arrival_report(arrival)["order_right"] is None


def test_the_gate_s_line_counts_one_topic_in_the_singular() -> None:
    report = {
        "verdict": "better",
        "system": "new",
        "reference": "prod",
        "difference": {"value": 0.4, "low": 0.1, "high": 0.7, "exact": None},
        "rule": "sequential",
        "horizon": 1.46,
        "horizon_unit": "topics",
        "decided_labels": 9,
        "topup_spent": 9,
        "topup_budget": 9,
    }
    assert "horizon 1 topic at label 9" in describe(report)
    assert "horizon 4 topics" in describe({**report, "horizon": 4.39})


def test_the_gate_says_why_the_server_refused_and_waits_no_longer_than_asked(
    live_server: Any, coordinator: AbstractBaseUser, assessor: AbstractBaseUser, tmp_path: Path
) -> None:
    campaign = _campaign(coordinator, strategy="items")
    token = Token.objects.create(user=coordinator).key
    run = tmp_path / "poor.run"
    run.write_text(RUN_POOR)
    refused = _gate(live_server, token, "--campaign", str(campaign.pk), "--run", str(run), "--budget", "5")
    _, errors = refused.communicate(timeout=60)
    assert refused.returncode == 3 and "nothing was drawn yet" in errors
    wrong_token = _gate(live_server, "nope", "--campaign", str(campaign.pk), "--arrival", "1")
    _, errors = wrong_token.communicate(timeout=60)
    assert wrong_token.returncode == 3 and "Invalid token" in errors
    campaign_assessors_assign(campaign=campaign, usernames=[assessor.get_username()])
    campaign = campaign_start(campaign=campaign)
    judge_all(campaign, assessor, recompute_each=False)
    waiting = _gate(
        live_server,
        token,
        "--campaign",
        str(campaign.pk),
        "--run",
        str(run),
        "--budget",
        "5",
        "--poll",
        "1",
        "--timeout",
        "1",
    )
    _, errors = waiting.communicate(timeout=60)
    assert waiting.returncode == 4 and "no verdict after 1 s" in errors, errors
