"""SxS services: task generation, sides, mixed grade tasks, leases, answers, skip, undo, overlap,
and the arrays `preference_data` hands the learned-DCG core."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import numpy as np
import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.db import DatabaseError
from django.utils import timezone

from graded.judging import task_answer
from labeling.models import Campaign, Judgment, Skip, Task
from sxs import services
from sxs.models import SxsAnswer, SxsSettings, SxsTask
from sxs.selectors import preference_data, side_bias, task_lists
from tests.faults import inserts_refused
from tests.sxs.conftest import QRELS, docno
from tests.sxs.helpers import answer_grades_first

# Database-specific: `make test` runs this module again on PostgreSQL (tests/test_database_specific.py).
pytestmark = [pytest.mark.django_db, pytest.mark.postgresql]


def test_it_makes_one_task_per_topic_and_system_pair_with_recorded_sides(sxs_campaign: Campaign) -> None:
    tasks = list(
        SxsTask.objects.filter(campaign=sxs_campaign).select_related("topic", "system_a", "system_b")
    )
    pairs = {(task.topic.qid, task.system_a.name, task.system_b.name) for task in tasks}
    assert pairs == {
        (qid, a, b)
        for qid in ("301", "302")
        for a, b in (("alpha", "beta"), ("alpha", "gamma"), ("beta", "gamma"))
    }
    assert len(tasks) == 6 and len({task.unit for task in tasks}) == 6
    assert {task.a_on_left for task in tasks} == {True, False}, "sides are drawn, not fixed"
    alpha_beta = next(task for task in tasks if (task.topic.qid, task.system_b.name) == ("301", "beta"))
    left, right = task_lists(alpha_beta)
    shown_a = [document.docno for document in (left if alpha_beta.a_on_left else right)]
    assert shown_a == [docno("301", n) for n in (1, 2, 3)], "system A's top 3, in its order"


def test_it_draws_the_same_sides_from_the_same_seed(make_sxs: Callable[..., Campaign]) -> None:
    first, second = make_sxs(), make_sxs()
    sides = [
        list(SxsTask.objects.filter(campaign=c).order_by("unit").values_list("a_on_left", flat=True))
        for c in (first, second)
    ]
    assert sides[0] == sides[1]


def test_it_queues_a_grade_task_per_ungraded_listed_document(sxs_campaign: Campaign) -> None:
    wanted = {(qid, docno(qid, n)) for qid in ("301", "302") for n in (4, 5, 6)}
    tasks = Task.objects.filter(campaign=sxs_campaign)
    assert {(task.topic.qid, task.document.docno) for task in tasks} == wanted
    assert all(task.draw.strategy == "sxs-grade" and task.draw.propensity == 1.0 for task in tasks)


def test_it_serves_the_topics_grade_tasks_before_the_comparison_that_needs_them(
    sxs_campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    served = []
    while True:
        item = services.sxs_next(campaign=sxs_campaign, assessor=assessor)
        if item is None:
            break
        if item.kind == "grade":
            served.append(("grade", item.grade.topic.qid, item.grade.document_id))
            task_answer(task=item.grade, assessor=assessor, grade=1, seconds=1.0)
        else:
            task = item.sxs
            needed = set(task.documents_a) | set(task.documents_b)
            ungraded = Task.objects.filter(
                campaign=sxs_campaign, topic=task.topic, document_id__in=needed, answered_at__isnull=True
            )
            assert not ungraded.exists(), "every document of the lists is graded before the comparison"
            served.append(("sxs", task.topic.qid, task.pk))
            services.sxs_answer(task=task, assessor=assessor, preference=-1, seconds=3.0)
    assert [kind for kind, *_ in served].count("sxs") == 6 and [kind for kind, *_ in served].count(
        "grade"
    ) == 6
    # Grades come in runs of one topic, right before a comparison of that topic.
    for index, (kind, qid, _) in enumerate(served):
        if kind == "grade":
            following = next(entry for entry in served[index:] if entry[0] == "sxs")
            assert following[1] == qid


def test_it_asks_no_grades_when_unjudged_documents_count_as_zero(make_sxs: Callable[..., Campaign]) -> None:
    campaign = make_sxs(unjudged="zero")
    assert not Task.objects.filter(campaign=campaign).exists()
    data_before = preference_data(campaign)
    assert data_before.left.shape == (0, 3)


def test_it_records_the_answer_as_shown_and_for_system_a(
    sxs_campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    for _ in range(6):
        item = answer_grades_first(sxs_campaign, assessor)
        services.sxs_answer(
            task=item.sxs, assessor=assessor, preference=-2, seconds=4.0, comment="  left wins "
        )
    answers = list(SxsAnswer.objects.filter(campaign=sxs_campaign))
    assert {answer.shown for answer in answers} == {-2}
    for answer in answers:
        assert answer.preference == (-2 if answer.a_on_left else 2), "left better = A better when A is left"
        assert answer.comment == "left wins" and answer.selection_rule == "random"
    first = min(answers, key=lambda answer: answer.created_at)
    assert first.propensity == pytest.approx(1 / 6), "1 / the open comparisons when it was chosen"


def test_it_stores_a_double_submit_once_and_refuses_a_foreign_answer(
    sxs_campaign: Campaign, assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    task = answer_grades_first(sxs_campaign, assessor).sxs
    with pytest.raises(services.LeaseConflict):
        services.sxs_answer(task=task, assessor=second_assessor, preference=1, seconds=1.0)
    first, created = services.sxs_answer(task=task, assessor=assessor, preference=1, seconds=1.0)
    again, created_again = services.sxs_answer(task=task, assessor=assessor, preference=1, seconds=1.0)
    assert created and not created_again and first.pk == again.pk
    assert SxsAnswer.objects.filter(task=task).count() == 1
    with pytest.raises(ValueError, match="preference"):
        services.sxs_answer(task=task, assessor=assessor, preference=3, seconds=1.0)


@pytest.mark.django_db(transaction=True)
def test_it_keeps_the_comparison_leased_when_its_answer_cannot_be_stored(
    sxs_campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    """Closing the lease and storing the answer are one transaction: a failed insert after the
    close must leave the comparison open and leased to its assessor, and nothing stored."""
    task = answer_grades_first(sxs_campaign, assessor).sxs
    with inserts_refused(SxsAnswer, "answer refused"), pytest.raises(DatabaseError, match="answer refused"):
        services.sxs_answer(task=task, assessor=assessor, preference=1, seconds=1.0)
    held = SxsTask.objects.get(pk=task.pk)
    assert (held.assessor_id, held.answered_at) == (assessor.pk, None), "the lease was not closed"
    assert not SxsAnswer.objects.filter(task=task).exists()
    assert services.sxs_next(campaign=sxs_campaign, assessor=assessor).sxs.pk == task.pk
    answer, created = services.sxs_answer(task=task, assessor=assessor, preference=1, seconds=1.0)
    assert created and list(SxsAnswer.objects.filter(task=task).values_list("pk", flat=True)) == [answer.pk]


def test_it_refuses_an_answer_after_the_lease_expired(
    sxs_campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    task = answer_grades_first(sxs_campaign, assessor).sxs
    later = timezone.now() + timedelta(seconds=sxs_campaign.lease_seconds + 5)
    with pytest.raises(services.LeaseConflict):
        services.sxs_answer(task=task, assessor=assessor, preference=0, seconds=1.0, now=later)


def test_it_gives_two_assessors_different_tasks_and_the_same_one_back_to_its_holder(
    sxs_campaign: Campaign, assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    mine = answer_grades_first(sxs_campaign, assessor).sxs
    theirs = answer_grades_first(sxs_campaign, second_assessor).sxs
    assert mine.pk != theirs.pk
    assert services.sxs_next(campaign=sxs_campaign, assessor=assessor).sxs.pk == mine.pk


def test_it_never_gives_one_assessor_two_slots_of_a_comparison(
    make_sxs: Callable[..., Campaign], assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    campaign = make_sxs(overlap=2)
    assert SxsTask.objects.filter(campaign=campaign).count() == 12
    for user in (assessor, second_assessor):
        units = []
        while (item := answer_grades_first(campaign, user)) is not None:
            units.append(item.sxs.unit)
            services.sxs_answer(task=item.sxs, assessor=user, preference=0, seconds=1.0)
        assert sorted(units) == sorted(set(units)) and len(units) == 6
    assert not SxsTask.objects.filter(campaign=campaign, answered_at__isnull=True).exists()


def test_it_puts_a_skipped_task_back_for_someone_else(
    sxs_campaign: Campaign, assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    task = answer_grades_first(sxs_campaign, assessor).sxs
    with pytest.raises(ValueError, match="reason"):
        services.sxs_skip(task=task, assessor=assessor, reason=" ")
    services.sxs_skip(task=task, assessor=assessor, reason="other", note="unclear query")
    recorded = Skip.objects.get()
    assert (recorded.kind, recorded.unit, recorded.reason, recorded.note) == (
        "sxs",
        task.pk,
        "other",
        "unclear query",
    )
    task.refresh_from_db()
    assert task.assessor_id is None and task.selection_rule == ""
    seen = []
    while (item := answer_grades_first(sxs_campaign, assessor)) is not None:
        seen.append(item.sxs.pk)
        services.sxs_answer(task=item.sxs, assessor=assessor, preference=0, seconds=1.0)
    assert task.pk not in seen and len(seen) == 5
    assert answer_grades_first(sxs_campaign, second_assessor).sxs.pk == task.pk


def test_it_undoes_the_last_answer_and_then_the_last_grade(
    sxs_campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    # A comparison that needed grades: grade, compare, then undo twice.
    while True:
        item = answer_grades_first(sxs_campaign, assessor)
        needs = Task.objects.filter(campaign=sxs_campaign, topic=item.sxs.topic, assessor=assessor).exists()
        if needs:
            break
        services.sxs_answer(task=item.sxs, assessor=assessor, preference=0, seconds=1.0)
    services.sxs_answer(task=item.sxs, assessor=assessor, preference=2, seconds=1.0)
    undone = services.sxs_undo(campaign=sxs_campaign, assessor=assessor)
    assert undone.kind == "sxs" and undone.sxs.pk == item.sxs.pk and undone.sxs.answered_at is None
    assert not SxsAnswer.objects.filter(task=item.sxs).exists()
    services.sxs_answer(task=undone.sxs, assessor=assessor, preference=1, seconds=1.0)
    assert SxsAnswer.objects.get(task=item.sxs).shown == 1
    services.sxs_undo(campaign=sxs_campaign, assessor=assessor)
    grade = services.sxs_undo(campaign=sxs_campaign, assessor=assessor)
    assert grade.kind == "grade" and grade.grade.answered_at is None


def test_it_hands_the_core_arrays_with_a_for_left_and_negative_for_a_better(
    sxs_campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    while (item := answer_grades_first(sxs_campaign, assessor)) is not None:
        services.sxs_answer(task=item.sxs, assessor=assessor, preference=-1, seconds=1.0)
    data = preference_data(sxs_campaign)
    assert data.left.shape == data.right.shape == (6, 3) and data.k == 3 and data.grade_levels == 3
    answers = SxsAnswer.objects.in_bulk(list(data.answer_ids))
    for row, answer_id in enumerate(data.answer_ids):
        answer = answers[int(answer_id)]
        assert data.preference[row] == (-1 if answer.a_on_left else 1)
        assert data.groups[row] == answer.topic_id
        qid = answer.topic.qid
        if answer.system_a.name == "alpha":  # alpha lists documents 1, 2, 3: imported qrels
            assert data.left[row].tolist() == [QRELS[(qid, n)] for n in (1, 2, 3)]
        if answer.system_b.name == "gamma":  # gamma lists 5, 4, 6: graded here as number % 3
            assert data.right[row].tolist() == [5 % 3, 4 % 3, 6 % 3]
    assert data.skipped == 0


def test_it_pads_short_lists_with_minus_one(make_sxs: Callable[..., Campaign]) -> None:
    campaign = make_sxs(k=6, unjudged="zero")
    task = SxsTask.objects.filter(campaign=campaign).first()
    assert len(task.documents_a) == 5
    from sxs.selectors import known_grades, list_grades

    row = list_grades(task.topic_id, task.documents_a, known_grades(campaign), 6, 0)
    assert row[-1] == -1 and len(row) == 6


def test_it_refuses_settings_out_of_range_and_changes_after_answers(
    sxs_campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    with pytest.raises(ValueError, match="k must be from 1 to 20"):
        services.sxs_configure(campaign=sxs_campaign, k=21)
    item = answer_grades_first(sxs_campaign, assessor)
    services.sxs_answer(task=item.sxs, assessor=assessor, preference=0, seconds=1.0)
    with pytest.raises(ValueError, match="cannot change"):
        services.sxs_configure(campaign=sxs_campaign, k=5)
    assert SxsSettings.objects.get(campaign=sxs_campaign).k == 3


def test_it_measures_side_bias_with_a_binomial_test() -> None:
    bias = side_bias([-2, -1, -1, 0, 1] + [-1] * 15)
    assert (bias.left, bias.right) == (18, 1)
    assert bias.p_value < 0.001 and bias.share_left == pytest.approx(18 / 19)
    assert side_bias([0, 0]).p_value is None


def test_it_counts_grades_and_answers_in_progress(sxs_campaign: Campaign, assessor: AbstractBaseUser) -> None:
    from labeling.modes import campaign_progress

    item = answer_grades_first(sxs_campaign, assessor)
    services.sxs_answer(task=item.sxs, assessor=assessor, preference=0, seconds=1.0)
    progress = campaign_progress(sxs_campaign)
    grades = Judgment.objects.filter(campaign=sxs_campaign, source="assessor").count()
    assert progress.pool_size == 6 and progress.open_tasks == 5 and progress.judgments == 1 + grades
    assert np.isfinite(progress.spent)
