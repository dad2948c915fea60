"""Judges of a graded campaign: label uploads (formats, errors, nothing half-stored), the
calibration set, and a judged campaign end to end through the services: draws with q > 0,
a calibration per sampling version, certified rows next to the judge-only values.

Toy campaign (tests/conftest.py): three topics, runs alpha and beta, grades 0-2, DCG@5.
"""

from __future__ import annotations

import numpy as np
import pytest
from django.contrib.auth.models import AbstractBaseUser

from estimation.judges.calibration import Calibration, no_calibration
from estimation.judges.design import judged_estimate, judged_parts, tuned_terms
from graded.claims import task_next
from graded.judging import task_answer
from labeling.import_reports import ImportFailed
from labeling.metric import campaign_metric
from labeling.models import Campaign, Draw
from labeling.recompute import recompute
from labeling.services.campaigns import (
    campaign_assessors_assign,
    campaign_create,
    campaign_start,
    campaign_update,
)
from sampling import (
    evaluation_runs_import,
    judge_calibration_import,
    judge_create,
    judge_labels_import,
    judge_summary,
    judges_dashboard,
    leaderboards,
    run_evaluate,
)
from sampling.estimates import estimates_compute
from sampling.models import JudgeCalibration, JudgeLabel
from tests.conftest import RUN_A, RUN_B, upload
from tests.sampling.helpers import (
    human_grade,
    judge_grade,
    pool_labels,
    within_its_interval_or_beyond_the_range,
)
from uploads.run_imports import runs_import

# Database-specific: `make test` runs this module again on PostgreSQL (tests/test_database_specific.py).
pytestmark = pytest.mark.postgresql


def test_it_stores_a_judges_labels_and_reports_coverage(draft_campaign: Campaign) -> None:
    judge = judge_create(campaign=draft_campaign, name="umbrela", model="DeepSeek-V3")
    text = pool_labels() + "9 0 elsewhere 1\n"
    report = judge_labels_import(judge=judge, files=[upload("judge.txt", text)])
    assert (report.created, report.lines) == (22, 22)
    assert (
        "21 of the pool's 21 items now carry a label of umbrela; 1 labels are for pairs outside the pool"
        in report.notes[0]
    )
    again = judge_labels_import(
        judge=judge,
        files=[upload("judge.jsonl", '{"qid": "1", "docid": "d1-1", "probs": [0.1, 0.1, 0.8]}\n')],
    )
    assert (again.created, again.updated) == (0, 1)
    label = JudgeLabel.objects.get(judge=judge, qid="1", docno="d1-1")
    assert (label.grade, label.probs, label.judge_class) == (None, [0.1, 0.1, 0.8], 2)


@pytest.mark.parametrize(
    ("name", "text", "line", "reason"),
    [
        ("j.txt", "1 0 d1-1 2\n1 0 d1-2 3\n", 2, "top grade"),
        ("j.jsonl", '{"qid": "1", "docid": "d1-1", "grade": 1}\n{"qid": "1", "grade": 1}\n', 2, "docid"),
        ("j.tsv", "query-id\tcorpus-id\tscore\n1\td1-1\t1\n1\td1-1\t2\n", 3, "twice"),
    ],
)
def test_it_refuses_a_bad_label_file_and_stores_nothing(
    draft_campaign: Campaign, name: str, text: str, line: int, reason: str
) -> None:
    judge = judge_create(campaign=draft_campaign, name="j")
    good = upload("good.txt", pool_labels())
    with pytest.raises(ImportFailed) as failure:
        judge_labels_import(judge=judge, files=[good, upload(name, text)])
    (error,) = failure.value.errors
    assert (error.file, error.line) == (name, line)
    assert reason in error.reason
    assert not JudgeLabel.objects.filter(judge=judge).exists()  # the good file is not half-stored either


def test_it_keeps_a_calibration_set_off_the_campaigns_own_topics(draft_campaign: Campaign) -> None:
    judge = judge_create(campaign=draft_campaign, name="j")
    humans = upload("humans.txt", "50 0 x 0\n50 0 y 2\n1 0 d1-1 2\n")
    labels = upload("labels.txt", "50 0 x 1\n50 0 y 2\n1 0 d1-1 2\n50 0 z 1\n")
    report = judge_calibration_import(judge=judge, human_qrels=[humans], judge_labels=[labels])
    assert report.created == 2
    assert any("own topics were dropped" in note for note in report.notes)
    assert sorted(JudgeLabel.objects.filter(judge=judge).values_list("qid", "docno", "human_grade")) == [
        ("50", "x", 0),
        ("50", "y", 2),
    ]


def test_a_judged_campaign_certifies_dcg_next_to_the_judge_only_value(
    draft_campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    campaign_update(campaign=draft_campaign, budget=8, strategy="judged")
    judge = judge_create(campaign=draft_campaign, name="lenient", shares_model_with="beta")
    judge_labels_import(judge=judge, files=[upload("judge.txt", pool_labels())])
    campaign_assessors_assign(campaign=draft_campaign, usernames=["alice"])
    campaign = campaign_start(campaign=draft_campaign)
    answered = 0
    while (task := task_next(campaign=campaign, assessor=assessor)) is not None:
        task_answer(task=task, assessor=assessor, grade=human_grade(task.document.docno), seconds=1.0)
        answered += 1
        recompute(campaign.pk)  # the worker's job after each answer: a new q from the new labels
    assert answered == 8
    draws = Draw.objects.filter(campaign=campaign, kind=Draw.Kind.ITEM)
    assert draws.exists() and all(0 < draw.propensity <= 1 for draw in draws)
    versions = set(draws.values_list("sampling_version", flat=True))
    stored = dict(JudgeCalibration.objects.filter(campaign=campaign).values_list("sampling_version", "table"))
    assert versions <= set(stored)  # every draw's h is kept
    assert {table["source"] for table in stored.values()} <= {"internal", "none"}
    result = estimates_compute(Campaign.objects.get(pk=campaign.pk))
    assert result["level"] == "judged"
    dcg = [row for row in result["systems"] if row["metric"].startswith("DCG")]
    assert {row["name"] for row in dcg} == {"alpha", "beta"}
    bounds = campaign_metric(campaign).value_bounds()
    for row in dcg:
        assert row["value"] is not None
        assert within_its_interval_or_beyond_the_range(row["value"], row["low"], row["high"], bounds)
        assert row["judge_only"] is not None
    # A new run ranked as alpha is estimated as the table estimates alpha: with the judge.
    copy_of_alpha = upload("gamma.run", RUN_A.replace("alpha", "gamma"))
    (gamma,) = evaluation_runs_import(campaign=campaign, files=[copy_of_alpha])
    evaluated = run_evaluate(Campaign.objects.get(pk=campaign.pk), gamma)
    alpha = next(row for row in dcg if row["name"] == "alpha")
    assert [evaluated[key] for key in ("value", "low", "high")] == pytest.approx(
        [alpha[key] for key in ("value", "low", "high")]
    )
    assert evaluated["unreachable_share"] == 0 and evaluated["warning"] is None
    # The lenient judge scores every system at least as high as the humans would.
    board = leaderboards(dcg)
    assert set(board["judge_order"]) == {"alpha", "beta"}
    summary = judge_summary(judge)
    assert summary["used_for_sampling"] and summary["coverage"]["labelled"] == 21
    assert summary["agreement"]["n_items"] >= 1
    assert summary["agreement"]["leniency"] > 0
    assert any("shares its model with beta" in warning for warning in summary["warnings"])
    # The circularity declaration shows beside the affected system's certified estimate.
    circular = {row["name"]: row["circular_judges"] for row in judges_dashboard(campaign)["systems"]}
    assert circular == {"alpha": [], "beta": ["lenient"]}


def _certified_alpha_from_stored_rows(campaign: Campaign, spent: float) -> tuple[float, ...]:
    """alpha's certified DCG@5 recomputed from what the campaign stored: each item draw's
    propensity and sampling version, the calibration h stored for that version, the humans'
    and the judge's grades. alpha ranks d?-1..d?-5 on each of the 3 topics (p = 1/3), gains
    0, 1, 3 for grades 0-2."""
    gains = np.array([0.0, 1.0, 3.0])
    pool = [(qid, f"d{qid}-{d}") for qid in ("1", "2", "3") for d in range(1, 8)]
    weight = {
        item: (1 / 3 / np.log2(int(item[1][-1]) + 1) if int(item[1][-1]) <= 5 else 0.0) for item in pool
    }
    tables = {
        version: Calibration.from_dict(table)
        for version, table in JudgeCalibration.objects.filter(campaign=campaign).values_list(
            "sampling_version", "table"
        )
    }

    def h(version: int, docnos: list[str]) -> np.ndarray:
        return tables.get(version, no_calibration(3)).h(np.array([judge_grade(docno) for docno in docnos]))

    draws = list(
        Draw.objects.filter(campaign=campaign, kind=Draw.Kind.ITEM)
        .order_by("order")
        .values_list("topic__qid", "document__docno", "propensity", "sampling_version")
    )
    pool_docnos = [docno for _, docno in pool]
    pool_weights = np.array([weight[item] for item in pool])
    plain, controls = judged_parts(
        np.array([float((pool_weights * h(version, pool_docnos)).sum()) for *_, version in draws]),
        np.array([weight[(qid, docno)] for qid, docno, *_ in draws]),
        gains[[human_grade(docno) for _, docno, *_ in draws]],
        np.array([h(version, [docno])[0] for _, docno, _, version in draws]),
        np.array([propensity for *_, propensity, _ in draws]),
    )
    estimate = judged_estimate(
        tuned_terms(plain, controls), n_judged=len({docno for _, docno, *_ in draws}), budget_spent=spent
    )
    return estimate.value, estimate.standard_error, estimate.low, estimate.high


@pytest.mark.parametrize("arriving", [False, True], ids=["labels-first", "labels-while-judging"])
def test_the_judged_estimate_is_the_core_s_estimate_from_the_stored_draws_and_calibrations(
    coordinator: AbstractBaseUser, assessor: AbstractBaseUser, arriving: bool
) -> None:
    """The app's own pipeline (draws, stored propensities, an h per sampling version) reports
    exactly what the core's certified estimator makes of what it stored, on a few campaign
    seeds. With `arriving`, the judge has labelled only topic 1 when judging starts and the rest
    arrives after two answers, as a judge running beside the assessors delivers it. The
    estimator's unbiasedness over seeds is the core's (tests/estimation/test_judges.py) and,
    through these services, `bench/bench_judged_app.py`'s (400 campaigns)."""
    labels = pool_labels().splitlines(keepends=True)
    first = [line for line in labels if line.startswith("1 ")] if arriving else labels
    rest = [line for line in labels if line not in first]
    values = []
    for seed in range(3):
        campaign = campaign_create(
            creator=coordinator, name=f"seed {seed}", metric="DCG@5", grades=["Bad", "Fair", "Good"],
            budget=5, budget_unit="judgments", strategy="judged",
        )  # fmt: skip
        Campaign.objects.filter(pk=campaign.pk).update(seed=seed + 1)
        runs_import(campaign=campaign, files=[upload("a.run", RUN_A), upload("b.run", RUN_B)])
        judge = judge_create(campaign=campaign, name="lenient")
        judge_labels_import(judge=judge, files=[upload("judge.txt", "".join(first))])
        campaign_assessors_assign(campaign=campaign, usernames=["alice"])
        campaign = campaign_start(campaign=Campaign.objects.get(pk=campaign.pk))
        answered = 0
        while (task := task_next(campaign=campaign, assessor=assessor)) is not None:
            task_answer(task=task, assessor=assessor, grade=human_grade(task.document.docno), seconds=1.0)
            answered += 1
            if answered == 2 and rest:
                judge_labels_import(judge=judge, files=[upload("later.txt", "".join(rest))])
            recompute(campaign.pk)
        result = estimates_compute(Campaign.objects.get(pk=campaign.pk))
        row = next(row for row in result["systems"] if row["name"] == "alpha" and row["metric"] == "DCG@5")
        value, se, low, high = _certified_alpha_from_stored_rows(campaign, result["spent"])
        reported = (row["value"], row["se"], *row["intervals"]["clt"])
        # The interval is cut to DCG@5's range: 0 to a grade-2 document at every rank.
        top = 3.0 * float((1 / np.log2(np.arange(2, 7))).sum())
        assert reported == pytest.approx((value, se, max(low, 0.0), min(high, top)), rel=1e-12, abs=1e-12), (
            seed
        )
        values.append(row["value"])
    assert len(set(values)) == 3, values


def test_the_dashboard_shows_agreement_and_certified_estimates_next_to_the_judge_only_ones(
    draft_campaign: Campaign, assessor: AbstractBaseUser, coordinator: AbstractBaseUser, client: object
) -> None:
    campaign_update(campaign=draft_campaign, budget=8, strategy="judged")
    judge = judge_create(campaign=draft_campaign, name="lenient", model="simulated-umbrela")
    judge_labels_import(judge=judge, files=[upload("judge.txt", pool_labels())])
    campaign_assessors_assign(campaign=draft_campaign, usernames=["alice"])
    campaign = campaign_start(campaign=draft_campaign)
    while (task := task_next(campaign=campaign, assessor=assessor)) is not None:
        task_answer(task=task, assessor=assessor, grade=human_grade(task.document.docno), seconds=1.0)
        recompute(campaign.pk)
    client.force_login(coordinator)  # type: ignore[attr-defined]
    page = client.get(f"/campaigns/{campaign.pk}/dashboard/").content.decode()  # type: ignore[attr-defined]
    assert "Model judges" in page and "simulated-umbrela" in page
    assert "Confusion: rows are the assessors" in page
    assert "Agreement per topic" in page
    assert "Judge only" in page and "Certified estimate" in page
    assert "Kendall" in page


def test_the_judge_informs_the_label_model_of_the_other_strategies(
    draft_campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    from sampling.models import SamplingState

    campaign_update(campaign=draft_campaign, strategy="active")
    judge = judge_create(campaign=draft_campaign, name="lenient")
    judge_labels_import(judge=judge, files=[upload("judge.txt", pool_labels())])
    # Calibration set on another topic: the judge's 2 means grade 2 there, its 1 grade 0.
    judge_calibration_import(
        judge=judge,
        human_qrels=[upload("h.txt", "".join(f"80 0 c{i} {2 if i % 2 else 0}\n" for i in range(10)))],
        judge_labels=[upload("j.txt", "".join(f"80 0 c{i} {2 if i % 2 else 1}\n" for i in range(10)))],
    )
    campaign_assessors_assign(campaign=draft_campaign, usernames=["alice"])
    campaign = campaign_start(campaign=draft_campaign)
    state = SamplingState.objects.get(campaign=campaign)
    assert "judge_class_0" in state.label_model["feature_names"]
    assert "calibration" in state.label_model["default_prior"]


def test_the_budget_planner_replays_the_judged_strategy(draft_campaign: Campaign) -> None:
    from sampling import campaign_plan

    campaign_update(campaign=draft_campaign, strategy="judged", metric="DCG@5")
    judge = judge_create(campaign=draft_campaign, name="lenient")
    judge_labels_import(judge=judge, files=[upload("judge.txt", pool_labels())])
    plan = campaign_plan(draft_campaign, budgets=[4, 8], repetitions=30)
    strategies = {row["strategy"] for row in plan["rows"]}
    assert "judged" in strategies and "judged" in plan["strategies"]
    assert plan["strategies"]["judged"]["label"] == "Model labels + human sample"


def test_an_internal_calibration_waits_for_its_first_stage_and_then_stays(
    draft_campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    campaign_update(campaign=draft_campaign, budget=18, strategy="judged")  # first stage: 10 labels
    judge = judge_create(campaign=draft_campaign, name="lenient")
    judge_labels_import(judge=judge, files=[upload("judge.txt", pool_labels())])
    campaign_assessors_assign(campaign=draft_campaign, usernames=["alice"])
    campaign = campaign_start(campaign=draft_campaign)
    while (task := task_next(campaign=campaign, assessor=assessor)) is not None:
        task_answer(task=task, assessor=assessor, grade=human_grade(task.document.docno), seconds=1.0)
        recompute(campaign.pk)
    tables = [
        table for _, table in sorted(
            JudgeCalibration.objects.filter(campaign=campaign).values_list("sampling_version", "table")
        )
    ]  # fmt: skip
    sources = [table["source"] for table in tables]
    assert sources[0] == "none" and "internal" in sources
    first_internal = sources.index("internal")
    assert set(sources[first_internal:]) == {"internal"}  # never back to none
    assert all(table == tables[first_internal] for table in tables[first_internal:])  # frozen
    assert sum(tables[first_internal]["counts"]) >= 10  # fitted on the whole first stage
    # The draw queue stops at the first stage until the calibration exists: no item of the
    # budget beyond the first stage is drawn from the no-model design.
    source_of = dict(
        JudgeCalibration.objects.filter(campaign=campaign).values_list("sampling_version", "table__source")
    )
    draws = Draw.objects.filter(campaign=campaign, kind=Draw.Kind.ITEM)
    before = {(d.topic_id, d.document_id) for d in draws if source_of.get(d.sampling_version) == "none"}
    after = [d for d in draws if source_of.get(d.sampling_version) == "internal"]
    assert len(before) <= 10 and after
