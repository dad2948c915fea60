"""Upload limits and the write lock: a gzip of empty lines is refused at the line cap (a clear
400, in well under a second), judge label and calibration files are parsed with no transaction
open and stored whole or not at all, and a LETOR pool naming a far feature index is refused
before its dense matrix takes the memory.

Toy campaign (tests/conftest.py): three topics, runs alpha and beta, grades 0-2.
"""

from __future__ import annotations

import gzip
import io
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection
from django.test import override_settings

from labeling.import_reports import ImportFailed
from labeling.models import Campaign
from labeling.services.campaigns import campaign_create
from sampling import judge_calibration_import, judge_create, judge_labels_import
from sampling import judge_labels as judge_labels_module
from sampling.models import JudgeLabel
from tests.conftest import upload
from training import services as training_services
from training.models import TrainingPool


def empty_lines_gzip(count: int) -> bytes:
    return gzip.compress(b"\n" * count, 9)


@override_settings(LABELING_UPLOAD_MAX_LINES=100_000)
def test_it_refuses_a_gzip_of_empty_lines_at_the_line_cap_quickly(
    draft_campaign: Campaign, coordinator: AbstractBaseUser, api: Callable
) -> None:
    judge = judge_create(campaign=draft_campaign, name="umbrela", model="an LLM")
    bomb = empty_lines_gzip(6_000_000)  # 6 MB of newlines in about 6 KB
    started = time.perf_counter()
    response = api(coordinator).post(
        f"/api/campaigns/{draft_campaign.pk}/judges/{judge.pk}/labels/",
        {"file": io.BytesIO(bomb)},
        format="multipart",
    )
    elapsed = time.perf_counter() - started
    assert response.status_code == 400, response.content
    (error,) = response.json()["errors"]
    assert error["line"] == 100_001 and "LABELING_UPLOAD_MAX_LINES" in error["message"], error
    assert elapsed < 3.0, f"refused after {elapsed:.1f} s"
    assert not JudgeLabel.objects.exists()


class ReadsRecorder(io.BytesIO):
    """An upload that records, at each read, whether a transaction was open."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.in_transaction: list[bool] = []

    def read(self, size: int | None = -1) -> bytes:
        self.in_transaction.append(connection.in_atomic_block)
        return super().read(size)

    def readline(self, size: int | None = -1) -> bytes:
        self.in_transaction.append(connection.in_atomic_block)
        return super().readline(size)


def pool_labels() -> str:
    return "".join(f"{q} 0 d{q}-{d} {d % 3}\n" for q in (1, 2, 3) for d in range(1, 8))


@pytest.mark.django_db(transaction=True)
def test_it_parses_judge_labels_and_calibration_sets_with_no_transaction_open(
    draft_campaign: Campaign,
) -> None:
    judge = judge_create(campaign=draft_campaign, name="umbrela", model="an LLM")
    labels = ReadsRecorder(pool_labels().encode())
    judge_labels_import(judge=judge, files=[("judge.txt", labels)])
    assert labels.in_transaction and not any(labels.in_transaction)
    assert JudgeLabel.objects.filter(judge=judge).count() == 21
    humans = ReadsRecorder(b"".join(f"70{d} 0 e{d} {d % 3}\n".encode() for d in range(5)))
    theirs = ReadsRecorder(b"".join(f"70{d} 0 e{d} {(d + 1) % 3}\n".encode() for d in range(5)))
    judge_calibration_import(
        judge=judge, human_qrels=[("humans.txt", humans)], judge_labels=[("j.txt", theirs)]
    )
    assert not any(humans.in_transaction) and not any(theirs.in_transaction)
    assert JudgeLabel.objects.filter(judge=judge, human_grade__isnull=False).count() == 5


@pytest.mark.django_db(transaction=True)
def test_it_takes_back_a_label_upload_whose_storing_fails_midway(
    draft_campaign: Campaign, monkeypatch: pytest.MonkeyPatch
) -> None:
    judge = judge_create(campaign=draft_campaign, name="umbrela", model="an LLM")
    judge_labels_import(judge=judge, files=[upload("first.txt", pool_labels())])
    before = set(JudgeLabel.objects.values_list("qid", "docno", "grade", "source_file"))
    monkeypatch.setattr(judge_labels_module, "STORE_ROWS", 4)
    store = judge_labels_module._LabelWrites.store
    calls = []

    def failing_store(self: Any, rows: list[JudgeLabel]) -> int:
        calls.append(len(rows))
        if len(calls) == 3:
            raise ConnectionError("the database went away")
        return store(self, rows)

    monkeypatch.setattr(judge_labels_module._LabelWrites, "store", failing_store)
    regraded = pool_labels().replace(" 0\n", " 2\n") + "9 0 elsewhere 1\n"
    with pytest.raises(ConnectionError):
        judge_labels_import(judge=judge, files=[upload("second.txt", regraded)])
    # Two batches (8 labels, replacing 8) were stored before the failure: all taken back.
    assert len(calls) == 3
    assert set(JudgeLabel.objects.values_list("qid", "docno", "grade", "source_file")) == before


@override_settings(TRAINING_MAX_FEATURE_INDEX=1000)
def test_it_refuses_a_feature_index_past_the_operators_bound(
    coordinator: AbstractBaseUser, api: Callable
) -> None:
    campaign = campaign_create(
        creator=coordinator, name="ltr", grades=["Bad", "Good"], budget=5, judging_mode="training"
    )
    rows = "".join(f"0 qid:q{n // 20} 10000:1.0 # docid = d{n}\n" for n in range(20_000))
    response = api(coordinator).post(
        f"/api/campaigns/{campaign.pk}/training/features/",
        {"file": io.BytesIO(gzip.compress(rows.encode()))},
        format="multipart",
    )
    assert response.status_code == 400, response.content
    (error,) = response.json()["errors"]
    assert error["line"] == 1 and "above 1000" in error["message"], error
    assert not TrainingPool.objects.exists()


@override_settings(TRAINING_MAX_FEATURE_INDEX=10_000, TRAINING_MAX_FEATURE_BYTES=8 * 1024 * 1024)
def test_it_refuses_a_dense_feature_matrix_past_its_bound_before_taking_the_memory(
    coordinator: AbstractBaseUser,
) -> None:
    campaign = campaign_create(
        creator=coordinator, name="ltr", grades=["Bad", "Good"], budget=5, judging_mode="training"
    )
    # 2,000 rows naming feature 10,000: a dense float32 matrix of 80 MB; the bound is 8 MB.
    rows = "".join(f"0 qid:q{n // 20} 10000:1.0 # docid = d{n}\n" for n in range(2_000))
    tracemalloc.start()
    try:
        with pytest.raises(ImportFailed) as refused:
            training_services.pool_upload(campaign=campaign, files=[upload("pool.txt", rows)])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    (error,) = refused.value.errors
    assert error.line == 210 and "would exceed 8388608 bytes" in error.reason, error
    assert peak < 20 * 1024 * 1024, f"peak {peak / 2**20:.0f} MiB"
    assert not TrainingPool.objects.exists()
