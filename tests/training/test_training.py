"""Training-data campaigns: uploads refuse bad files whole, rounds respect the budget and never
pick a labeled item, the same seed gives the same selection, a judged round leads to the next,
personas, exports and the summary."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable

import numpy as np
import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.test import Client

from graded.claims import task_next
from graded.judging import task_answer, task_skip
from labeling.import_reports import ImportFailed
from labeling.models import Campaign, Judgment, Task
from labeling.services.campaign_copies import campaign_clone
from labeling.services.campaigns import campaign_assessors_assign, campaign_create, campaign_start
from tests.conftest import upload
from training import exports, services
from training.models import TrainingPool, TrainingRound, TrainingSelection
from training.selectors import training_progress, training_summary
from uploads.imports import topics_import

# Database-specific: `make test` runs this module again on PostgreSQL (tests/test_database_specific.py).
pytestmark = pytest.mark.postgresql

QUERIES, DOCS, FEATURES = 8, 12, 5


def letor_text(seed: int = 1, labeled_queries: int = 3, prefix: str = "q") -> str:
    """A synthetic pool: relevance follows feature 1; the first queries fully labeled."""
    rng = np.random.default_rng(seed)
    lines = []
    for query in range(QUERIES):
        for doc in range(DOCS):
            features = rng.random(FEATURES)
            grade = int(np.clip(np.floor(features[0] * 3 + rng.normal(0, 0.3)), 0, 2))
            shown = grade if query < labeled_queries else -1
            values = " ".join(f"{index + 1}:{value:.4f}" for index, value in enumerate(features))
            lines.append(f"{shown} qid:{prefix}{query} {values} # docid = {prefix}{query}-d{doc}\n")
    return "".join(lines)


def hidden_grade(docid: str, text: str) -> int:
    for line in text.splitlines():
        if line.endswith(f"docid = {docid}"):
            features = [float(token.split(":")[1]) for token in line.split("#")[0].split()[2:]]
            return int(np.clip(np.floor(features[0] * 3), 0, 2))
    raise KeyError(docid)


@pytest.fixture
def make_training(coordinator: AbstractBaseUser, assessor: AbstractBaseUser) -> Callable[..., Campaign]:
    def make(*, budget: int = 30, round_size: int = 10, start: bool = True, **settings: object) -> Campaign:
        campaign = campaign_create(
            creator=coordinator,
            name="ltr",
            grades=["Bad", "Fair", "Good"],
            budget=budget,
            judging_mode="training",
            mode_settings={"round_size": round_size, "ensemble": 2, "docs_per_query": 4, **settings},
        )
        services.pool_upload(campaign=campaign, files=[upload("pool.txt", letor_text())])
        campaign_assessors_assign(campaign=campaign, usernames=["alice"])
        if start:
            campaign = campaign_start(campaign=campaign)
            services.rounds_advance(campaign=campaign)  # what the worker's recompute does
        return campaign

    return make


def test_a_bad_pool_is_refused_whole_with_file_and_line(coordinator: AbstractBaseUser) -> None:
    campaign = campaign_create(
        creator=coordinator, name="ltr", grades=["Bad", "Good"], budget=5, judging_mode="training"
    )
    bad = "1 qid:a 1:0.5 # docid = x\n0 qid:a 1:oops # docid = y\n"
    with pytest.raises(ImportFailed) as refused:
        services.pool_upload(campaign=campaign, files=[upload("pool.txt", bad)])
    assert refused.value.errors[0].file == "pool.txt" and refused.value.errors[0].line == 2
    too_high = "1 qid:a 1:0.5 # docid = x\n2 qid:a 1:0.1 # docid = y\n"
    with pytest.raises(ImportFailed, match="above the campaign's top grade 1") as refused:
        services.pool_upload(campaign=campaign, files=[upload("pool.txt", too_high)])
    assert refused.value.errors[0].line == 2
    assert not TrainingPool.objects.exists()


def test_round_one_fills_the_round_exactly_from_unlabeled_rows_and_queues_graded_tasks(
    make_training: Callable[..., Campaign],
) -> None:
    campaign = make_training()
    training_round = TrainingRound.objects.get(campaign=campaign)
    assert training_round.number == 1 and training_round.selected == 10
    assert training_round.model == "lightgbm x 2" and training_round.strategy == "elo_qd"
    picked = list(TrainingSelection.objects.filter(round=training_round).values_list("qid", flat=True))
    assert all(qid not in ("q0", "q1", "q2") for qid in picked), "labeled queries are never picked"
    per_query = {qid: picked.count(qid) for qid in set(picked)}
    assert max(per_query.values()) <= 4, "the two-stage cap"
    assert Task.objects.filter(campaign=campaign, draw__strategy="training").count() == 10
    assert all(
        item.el_query is not None and item.inclusion_probability is None
        for item in TrainingSelection.objects.all()
    )


def test_the_same_seed_gives_the_same_selection(make_training: Callable[..., Campaign]) -> None:
    first = make_training()
    second = make_training()
    second.seed = first.seed
    Campaign.objects.filter(pk=second.pk).update(seed=first.seed)
    TrainingSelection.objects.filter(round__campaign=second).delete()
    TrainingRound.objects.filter(campaign=second).delete()
    Task.objects.filter(campaign=second).delete()
    services.rounds_advance(campaign=Campaign.objects.get(pk=second.pk))

    def items(campaign: Campaign) -> list[tuple[str, str]]:
        return list(
            TrainingSelection.objects.filter(round__campaign=campaign)
            .order_by("order")
            .values_list("qid", "docid")
        )

    assert items(first) == items(second) and len(items(first)) == 10


def test_a_judged_round_leads_to_the_next_with_the_new_labels_until_the_budget(
    make_training: Callable[..., Campaign],
    assessor: AbstractBaseUser,
) -> None:
    campaign = make_training(budget=25)
    pool_text = letor_text()
    assert services.rounds_advance(campaign=campaign) is None, "round 1 is still open"
    for expected_round, size in ((2, 10), (3, 5), (None, 0)):
        while (task := task_next(campaign=campaign, assessor=assessor)) is not None:
            grade = hidden_grade(task.document.docno, pool_text)
            task_answer(task=task, assessor=assessor, grade=grade, seconds=2.0)
        made = services.rounds_advance(campaign=campaign)
        if expected_round is None:
            assert made is None, "the budget of 25 labels is spent"
            break
        assert made is not None and made.number == expected_round and made.selected == size
        assert made.labels_before == 36 + 10 * (expected_round - 1)
        assert services.rounds_advance(campaign=campaign) is None, "recomputing twice makes one round"
    rows = list(TrainingSelection.objects.filter(round__campaign=campaign).values_list("row", flat=True))
    assert len(rows) == len(set(rows)) == 25, "never the same item twice"
    assert Judgment.objects.filter(campaign=campaign).count() == 25


def test_uploaded_scores_replace_the_model(make_training: Callable[..., Campaign]) -> None:
    campaign = make_training(start=False)
    lines = "".join(
        f"q{query} q{query}-d{doc} {query + doc / 10:.2f} {doc / 10:.2f}\n"
        for query in range(QUERIES)
        for doc in range(DOCS)
    )
    services.scores_upload(campaign=campaign, files=[upload("scores.tsv", lines)])
    campaign = campaign_start(campaign=campaign)
    made = services.rounds_advance(campaign=campaign)
    assert made is not None and made.model == "uploaded scores"


def test_test_queries_give_a_learning_curve_and_the_summary_says_the_mode(
    make_training: Callable[..., Campaign],
    assessor: AbstractBaseUser,
) -> None:
    campaign = make_training(start=False)
    services.test_upload(
        campaign=campaign, files=[upload("test.txt", letor_text(seed=9, labeled_queries=QUERIES, prefix="t"))]
    )
    campaign = campaign_start(campaign=campaign)
    services.rounds_advance(campaign=campaign)
    summary = training_summary(campaign)
    assert summary["learning_curve"][0]["labels"] == 36
    assert 0 < summary["learning_curve"][0]["test_dcg"]
    assert summary["selection_mode"].startswith("deterministic")
    assert summary["coverage"]["queries"] == QUERIES and summary["coverage"]["selected"] >= 1


def test_the_learning_curve_ends_with_every_judged_label_once_the_budget_is_spent(
    make_training: Callable[..., Campaign],
    assessor: AbstractBaseUser,
) -> None:
    campaign = make_training(budget=20, start=False)
    services.test_upload(
        campaign=campaign, files=[upload("test.txt", letor_text(seed=9, labeled_queries=QUERIES, prefix="t"))]
    )
    campaign = campaign_start(campaign=campaign)
    services.rounds_advance(campaign=campaign)
    pool_text = letor_text()
    for _ in range(2):
        while (task := task_next(campaign=campaign, assessor=assessor)) is not None:
            task_answer(
                task=task, assessor=assessor, grade=hidden_grade(task.document.docno, pool_text), seconds=2.0
            )
        services.rounds_advance(campaign=campaign)
    assert services.rounds_advance(campaign=campaign) is None, "the final point is stored once"
    curve = training_summary(campaign)["learning_curve"]
    assert [point["labels"] for point in curve] == [36, 46, 56], "one point per round, then the last labels"
    assert curve[-1]["hours"] == pytest.approx(20 * 2.0 / 3600)
    assert [row["final"] for row in training_summary(campaign)["rounds"]] == [False, False, True]
    final = TrainingRound.objects.get(campaign=campaign, strategy=services.FINAL_STRATEGY)
    assert final.selected == 0 and not final.selections.exists() and final.test_dcg > 0
    assert TrainingSelection.objects.filter(round__campaign=campaign).count() == 20


def test_the_progress_says_when_the_next_round_is_being_selected(
    make_training: Callable[..., Campaign],
    assessor: AbstractBaseUser,
) -> None:
    campaign = make_training(budget=12, start=False)
    campaign = campaign_start(campaign=campaign)

    def state() -> str:
        return training_progress(Campaign.objects.get(pk=campaign.pk)).state

    assert state() == "next_round", "started, round one not selected yet"
    services.rounds_advance(campaign=campaign)
    assert state() == "running"
    while (task := task_next(campaign=campaign, assessor=assessor)) is not None:
        task_answer(task=task, assessor=assessor, grade=1, seconds=1.0)
    assert state() == "next_round", "round one judged, two labels of budget left"
    services.rounds_advance(campaign=campaign)
    while (task := task_next(campaign=campaign, assessor=assessor)) is not None:
        task_answer(task=task, assessor=assessor, grade=1, seconds=1.0)
    assert state() == "budget_spent"


def test_the_drawn_variant_records_inclusion_probabilities(make_training: Callable[..., Campaign]) -> None:
    campaign = make_training(drawn=True)
    items = list(TrainingSelection.objects.filter(round__campaign=campaign))
    # Two-stage (elo_qd): at most the round's 10 labels, each with its marginal probability,
    # the product of its query's and its own given the query.
    assert 0 < len(items) <= 10
    for item in items:
        assert item.inclusion_probability is not None
        assert item.query_inclusion_probability is not None
        assert item.document_inclusion_probability_given_query is not None
        assert 0 < item.inclusion_probability <= 1
        assert item.inclusion_probability == pytest.approx(
            item.query_inclusion_probability * item.document_inclusion_probability_given_query
        )
        assert item.task is not None and item.task.draw.propensity == item.inclusion_probability
    log = list(csv.DictReader(io.StringIO("".join(exports.selection_log(campaign)))))
    assert float(log[0]["inclusion_probability"]) == pytest.approx(items[0].inclusion_probability, rel=1e-5)
    assert float(log[0]["query_inclusion_probability"]) == pytest.approx(
        items[0].query_inclusion_probability, rel=1e-5
    )
    assert training_summary(campaign)["selection_mode"].startswith("drawn")
    with pytest.raises(ValueError, match="drawing applies to"):
        services.training_configure(campaign, {"strategy": "random_q", "drawn": True})


def test_personas_and_exports(
    make_training: Callable[..., Campaign],
    api: Callable,
    assessor: AbstractBaseUser,
    coordinator: AbstractBaseUser,
) -> None:
    campaign = make_training()
    url = f"/api/campaigns/{campaign.pk}/training/features/"
    body = {"file": io.BytesIO(letor_text().encode())}
    assert api(assessor).post(url, body, format="multipart").status_code == 403
    summary = api(coordinator).get(f"/api/campaigns/{campaign.pk}/training/").json()
    assert summary["rounds"][0]["selected"] == 10
    assert api(assessor).get(f"/api/campaigns/{campaign.pk}/training/").status_code == 403
    made = api(coordinator).get(f"/api/campaigns/{campaign.pk}/").json()
    assert made["mode"] == "training" and made["judging_mode"] == "training"
    log = list(csv.DictReader(io.StringIO("".join(exports.selection_log(campaign)))))
    assert len(log) == 10 and log[0]["round"] == "1" and log[0]["strategy"] == "elo_qd"
    assert log[0]["inclusion_probability"] == "", "a deterministic round has no probabilities"
    letor = "".join(exports.letor_training_set(campaign)).splitlines()
    assert len(letor) == 36 and letor[0].startswith(("0 qid:q0", "1 qid:q0", "2 qid:q0"))
    qrels = "".join(exports.training_qrels(campaign)).splitlines()
    assert len(qrels) == 36 and qrels[0].startswith("q0 0 q0-d0 ")
    download = api(coordinator).get(f"/api/campaigns/{campaign.pk}/training/export/selection.csv")
    assert download.status_code == 200


def test_a_clone_takes_the_pool_and_settings_but_no_round(
    make_training: Callable[..., Campaign],
    coordinator: AbstractBaseUser,
) -> None:
    campaign = make_training(round_size=7)
    clone = campaign_clone(campaign=campaign, creator=coordinator)
    assert clone.judging_mode == "training"
    assert TrainingPool.objects.get(campaign=clone).rows == QUERIES * DOCS
    assert services.settings_of(clone).round_size == 7
    assert not TrainingRound.objects.filter(campaign=clone).exists()


def test_preflight_says_the_pool_has_no_text_yet(make_training: Callable[..., Campaign]) -> None:
    from labeling.modes import campaign_preflight

    campaign = make_training(start=False)
    problems = {problem.kind: problem for problem in campaign_preflight(campaign)}
    assert problems["topics_missing"].count == QUERIES and problems["topics_missing"].examples[0] == "q0"
    assert problems["documents_missing"].count == QUERIES * DOCS
    topics_import(campaign=campaign, files=[upload("t.jsonl", '{"id": "q0", "title": "zero"}\n')])
    assert "topics_missing" not in {problem.kind for problem in campaign_preflight(campaign)}


def test_the_settings_button_leads_to_the_form_which_is_fixed_once_started(
    make_training: Callable[..., Campaign],
    coordinator: AbstractBaseUser,
    api: Callable,
) -> None:
    from labeling.modes import mode_of

    campaign = make_training(start=False)
    client = api(coordinator)
    page = client.get(f"/campaigns/{campaign.pk}/")
    section = mode_of(campaign).campaign_section(page.wsgi_request, campaign)
    target = client.get(section["settings_url"].split("#")[0])
    assert target.status_code == 200 and 'id="training-settings"' in target.content.decode()
    assert "Save settings" in target.content.decode()
    campaign = campaign_start(campaign=campaign)
    started = client.get(f"/campaigns/{campaign.pk}/").content.decode()
    assert "Settings are fixed once the campaign started" in started
    assert (
        'name="round_size"' in started and "disabled" in started.split('name="round_size"')[1].split(">")[0]
    )


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        ("0 qid:a 1000000000000:1 # docid = x\n", "feature index 1000000000000 is above"),
        ("0 qid:a 9223372036854775808:1 # docid = x\n", "feature index 9223372036854775808 is above"),
        ("0 qid:a 1:1e39 # docid = x\n", "beyond float32's range"),
        ("0 qid:" + "q" * 300 + " 1:1 # docid = x\n", "qid longer than 64 characters"),
        ("0 qid:a 1:1 # docid = " + "d" * 500 + "\n", "docid longer than 200 characters"),
    ],
)
def test_a_pool_follows_the_rule_of_every_upload(
    coordinator: AbstractBaseUser,
    api: Callable,
    row: str,
    reason: str,
) -> None:
    campaign = campaign_create(
        creator=coordinator, name="ltr", grades=["Bad", "Good"], budget=5, judging_mode="training"
    )
    response = api(coordinator).post(
        f"/api/campaigns/{campaign.pk}/training/features/",
        {"file": io.BytesIO(b"1 qid:a 1:0.5 # docid = w\n" + row.encode())},
        format="multipart",
    )
    assert response.status_code == 400, response.content
    errors = response.json()["errors"]
    assert errors[0]["line"] == 2 and reason in errors[0]["message"], errors
    assert not TrainingPool.objects.exists()


def test_a_held_item_does_not_hold_up_the_next_round(
    make_training: Callable[..., Campaign],
    assessor: AbstractBaseUser,
    second_assessor: AbstractBaseUser,
    api: Callable,
) -> None:
    from django.core.cache import cache

    from labeling.recompute import _marker_keys, recompute_soon_wait

    campaign = make_training(budget=25, round_size=5)
    campaign_assessors_assign(campaign=campaign, usernames=["bob"])
    # alice opens the judge page and leaves it: she holds one item of round 1.
    held = api(assessor).get(f"/api/campaigns/{campaign.pk}/next/").json()["task"]
    pool_text = letor_text()
    while (task := task_next(campaign=campaign, assessor=second_assessor)) is not None:
        grade = hidden_grade(task.document.docno, pool_text)
        task_answer(task=task, assessor=second_assessor, grade=grade, seconds=2.0)
    # Nothing is left for bob to claim: he is told the next round is coming, and his empty
    # /next/ asks for the recompute that selects it (no answer has asked since alice's lease).
    assert training_progress(campaign).state == "next_round"
    recompute_soon_wait(timeout=5)
    cache.delete(_marker_keys(campaign.pk)[0])
    assert api(second_assessor).get(f"/api/campaigns/{campaign.pk}/next/").status_code == 204
    recompute_soon_wait(timeout=5)
    assert cache.get(_marker_keys(campaign.pk)[0]) is not None
    second = services.rounds_advance(campaign=campaign)
    assert second is not None and second.number == 2, "selected while alice still holds her item"
    held_row = TrainingSelection.objects.get(task_id=held).row
    assert held_row not in set(TrainingSelection.objects.filter(round=second).values_list("row", flat=True))
    assert task_next(campaign=campaign, assessor=second_assessor) is not None


def test_a_skipped_item_does_not_stall_the_round_of_a_single_assessor(
    make_training: Callable[..., Campaign],
    assessor: AbstractBaseUser,
) -> None:
    campaign = make_training(budget=25, round_size=5)
    pool_text = letor_text()
    skipped = None
    while (task := task_next(campaign=campaign, assessor=assessor)) is not None:
        if skipped is None:
            task_skip(task=task, assessor=assessor, reason="not_sure")
            skipped = task
            continue
        task_answer(
            task=task, assessor=assessor, grade=hidden_grade(task.document.docno, pool_text), seconds=2.0
        )
    # alice skipped one item and judged the rest: nobody else will judge it soon, so the round
    # must not wait on it (before: "Nothing left for you" for ever).
    assert skipped is not None
    assert not services.round_waiting(campaign)
    assert training_progress(campaign).state == "next_round"
    second = services.rounds_advance(campaign=campaign)
    assert second is not None and second.number == 2
    skipped_row = TrainingSelection.objects.get(task_id=skipped.pk).row
    assert skipped_row not in set(
        TrainingSelection.objects.filter(round=second).values_list("row", flat=True)
    )
    # The skipped item stays open for another assessor; alice gets the new round.
    assert Task.objects.get(pk=skipped.pk).answered_at is None
    following = task_next(campaign=campaign, assessor=assessor)
    assert following is not None and following.pk != skipped.pk


def test_a_round_names_a_topic_without_text_by_its_id_as_every_mode_does(
    make_training: Callable[..., Campaign],
) -> None:
    from labeling.models import Topic

    campaign = make_training()
    stubs = Topic.objects.filter(campaign=campaign, is_stub=True)
    assert stubs.exists() and all(topic.title == topic.qid for topic in stubs)


def test_the_dashboard_quotes_the_benchmark_at_every_budget(
    make_training: Callable[..., Campaign],
    coordinator: AbstractBaseUser,
    client: Client,
) -> None:
    campaign = make_training()
    client.force_login(coordinator)  # type: ignore[arg-type]
    page = client.get(f"/campaigns/{campaign.pk}/dashboard/").content.decode()
    section = page[page.index('id="benchmark"') :]
    # MQ2008 at 800 and 1,600 labels: elo_qd's advantage over random queries vanishes.
    mq2008 = section[section.index('data-benchmark="MQ2008"') :]
    for budget in (50, 100, 200, 400, 800, 1600, 3200):
        assert f'<td class="num">{budget}</td>' in mq2008
    row_800 = mq2008[mq2008.index('<td class="num">800</td>') :].split("</tr>")[0]
    assert "0.005 ± 0.012" in row_800 and "no measurable difference" in row_800
