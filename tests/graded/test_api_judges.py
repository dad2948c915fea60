"""REST: /api/campaigns/{id}/judges/ (list, add), .../judges/{j}/ (coverage, agreement),
.../labels/ and .../calibration/ (uploads with file:line errors), access, and the exports."""

from __future__ import annotations

import io
import json
from collections.abc import Callable

from django.contrib.auth.models import AbstractBaseUser
from rest_framework.test import APIClient

from labeling.models import Campaign
from sampling.models import JudgeLabel

Api = Callable[[AbstractBaseUser | None], APIClient]


def labels_file(name: str, text: str) -> io.BytesIO:
    stream = io.BytesIO(text.encode())
    stream.name = name
    return stream


def test_a_coordinator_adds_a_judge_and_uploads_its_labels(
    api: Api, coordinator: AbstractBaseUser, campaign: Campaign
) -> None:
    client = api(coordinator)
    created = client.post(
        f"/api/campaigns/{campaign.pk}/judges/",
        {
            "name": "umbrela",
            "model": "DeepSeek-V3",
            "version_date": "2025-03-01",
            "shares_model_with": "beta",
        },
        format="json",
    )
    assert created.status_code == 201, created.content
    judge_id = created.json()["id"]
    text = "".join(f"{q} 0 d{q}-{d} {d % 3}\n" for q in (1, 2, 3) for d in range(1, 8))
    uploaded = client.post(
        f"/api/campaigns/{campaign.pk}/judges/{judge_id}/labels/",
        {"file": labels_file("umbrela.txt", text)},
        format="multipart",
    )
    assert uploaded.status_code == 201, uploaded.content
    assert uploaded.json()["created"] == 21
    detail = client.get(f"/api/campaigns/{campaign.pk}/judges/{judge_id}/?per_topic=1").json()
    assert detail["coverage"] == {"labelled": 21, "pool": 21, "outside": 0, "labels": 21}
    assert detail["model"] == "DeepSeek-V3" and detail["version_date"] == "2025-03-01"
    assert detail["agreement"]["n_items"] == 0 and detail["agreement"]["topics"] == []
    assert any("circularity" in warning for warning in detail["warnings"])
    listed = client.get(f"/api/campaigns/{campaign.pk}/judges/").json()
    assert [judge["name"] for judge in listed] == ["umbrela"]
    labels = client.get(f"/api/campaigns/{campaign.pk}/export/judge-labels.csv")
    assert labels.status_code == 200
    assert b"umbrela,DeepSeek-V3,1,d1-1,1" in b"".join(labels.streaming_content)


def test_it_names_the_file_and_line_of_a_bad_label_and_stores_nothing(
    api: Api, coordinator: AbstractBaseUser, campaign: Campaign
) -> None:
    client = api(coordinator)
    judge_id = client.post(f"/api/campaigns/{campaign.pk}/judges/", {"name": "j"}, format="json").json()["id"]
    bad = labels_file(
        "bad.jsonl",
        '{"qid": "1", "docid": "d1-1", "grade": 1}\n{"qid": "1", "docid": "d1-2", "grade": "2"}\n',
    )
    answer = client.post(
        f"/api/campaigns/{campaign.pk}/judges/{judge_id}/labels/", {"file": bad}, format="multipart"
    )
    assert answer.status_code == 400
    (error,) = answer.json()["errors"]
    assert (error["file"], error["line"]) == ("bad.jsonl", 2)
    assert not JudgeLabel.objects.exists()
    duplicate = client.post(f"/api/campaigns/{campaign.pk}/judges/", {"name": "j"}, format="json")
    assert duplicate.status_code == 400 and "already has a judge" in duplicate.json()["detail"]
    loose = client.post(f"/api/campaigns/{campaign.pk}/judges/", {"name": 5}, format="json")
    assert loose.status_code == 400  # JSON types taken strictly


def test_it_takes_a_calibration_set(api: Api, coordinator: AbstractBaseUser, campaign: Campaign) -> None:
    client = api(coordinator)
    judge_id = client.post(f"/api/campaigns/{campaign.pk}/judges/", {"name": "j"}, format="json").json()["id"]
    answer = client.post(
        f"/api/campaigns/{campaign.pk}/judges/{judge_id}/calibration/",
        {
            "human_qrels": labels_file("h.txt", "70 0 x 1\n70 0 y 2\n"),
            "judge_labels": labels_file("j.txt", "70 0 x 2\n70 0 y 2\n"),
        },
        format="multipart",
    )
    assert answer.status_code == 201, answer.content
    assert client.get(f"/api/campaigns/{campaign.pk}/judges/{judge_id}/").json()["calibration_set"] == 2


def test_outsiders_and_assessors_cannot_add_judges(
    api: Api, assessor: AbstractBaseUser, outsider: AbstractBaseUser, campaign: Campaign
) -> None:
    assert api(outsider).get(f"/api/campaigns/{campaign.pk}/judges/").status_code == 404
    answer = api(assessor).post(f"/api/campaigns/{campaign.pk}/judges/", {"name": "mine"}, format="json")
    assert answer.status_code == 403, "a member whose role may not manage (labeling/access.py)"
    assert not campaign.judges.exists()


def test_judges_that_run_are_added_run_and_cancelled_over_rest(
    api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser, campaign: Campaign
) -> None:
    from sampling import judge_run_step
    from sampling.models import JudgeRun

    client = api(coordinator)
    base = f"/api/campaigns/{campaign.pk}/judges/"
    lexical = client.post(base, {"kind": "lexical", "name": "bm25"}, format="json")
    assert lexical.status_code == 201, lexical.content
    body = lexical.json()
    assert (body["kind"], body["version"], body["runnable"], body["run"]) == ("lexical", 1, True, None)
    assert api(assessor).post(f"{base}{body['id']}/run/").status_code == 403
    started = client.post(f"{base}{body['id']}/run/")
    assert started.status_code == 202 and started.json()["run"]["status"] == "queued"
    assert client.post(f"{base}{body['id']}/run/").json()["run"]["id"] == started.json()["run"]["id"]
    judge_run_step(started.json()["run"]["id"])  # the worker's step, here
    run = client.get(f"{base}{body['id']}/").json()["run"]
    assert (run["status"], run["done"], run["pairs_total"], run["labels"]) == ("done", 21, 21, 21)
    # An endpoint judge: the key's variable must be one the settings allow; the key is never sent.
    refused = client.post(
        base,
        {
            "kind": "endpoint",
            "name": "llm",
            "model": "m",
            "base_url": "http://127.0.0.1:9/v1",
            "api_key_variable": "PATH",
        },
        format="json",
    )
    assert refused.status_code == 400 and "'PATH' is not one the settings allow" in refused.content.decode()
    endpoint = client.post(
        base,
        {"kind": "endpoint", "name": "llm", "model": "m", "base_url": "http://127.0.0.1:9/v1",
         "api_key_variable": "JUDGE_API_KEY", "cost_cap": 5, "price_in_per_1k": 1, "concurrency": 2},
        format="json",
    )  # fmt: skip
    assert endpoint.status_code == 201, endpoint.content
    judge_id = endpoint.json()["id"]
    assert "{document}" in endpoint.json()["prompt"] and endpoint.json()["cost_cap"] == 5
    client.post(f"{base}{judge_id}/run/")
    cancelled = client.post(f"{base}{judge_id}/cancel/")
    assert cancelled.status_code == 200 and cancelled.json()["run"]["status"] == "cancelled"
    assert JudgeRun.objects.filter(judge_id=judge_id).get().status == "cancelled"
    edited = client.patch(
        f"{base}{judge_id}/", {"prompt": "Grade {document} for {query}: 0-{top_grade}"}, format="json"
    )
    assert edited.status_code == 200 and edited.json()["version"] == 2
    assert client.patch(f"{base}{judge_id}/", {"concurrency": 3}, format="json").json()["version"] == 2
    broken = client.patch(f"{base}{judge_id}/", {"prompt": "{document} {passages}"}, format="json")
    assert broken.status_code == 400 and "unknown field" in broken.content.decode()
    exported = client.get(f"/api/campaigns/{campaign.pk}/export/judges.json")
    versions = next(
        j
        for j in json.loads(b"".join(exported.streaming_content) if exported.streaming else exported.content)[
            "judges"
        ]
        if j["id"] == judge_id
    )["versions"]
    assert [v["number"] for v in versions] == [1, 2] and versions[1]["prompt"].startswith("Grade {document}")
    # The coordinator chooses which judge the strategy samples with (the lexical one came first).
    listed = {j["name"]: j["used_for_sampling"] for j in client.get(base).json()}
    assert listed == {"bm25": True, "llm": False}
    from sampling.models import JudgeLabel as Label

    Label.objects.create(judge_id=judge_id, qid="1", docno="d1-1", grade=1, judge_class=1)
    chosen = client.patch(f"{base}{judge_id}/", {"use_for_sampling": True}, format="json")
    assert chosen.status_code == 200 and chosen.json()["used_for_sampling"] and chosen.json()["version"] == 2
    assert {j["name"]: j["used_for_sampling"] for j in client.get(base).json()} == {
        "bm25": False,
        "llm": True,
    }
    uploaded = client.post(base, {"kind": "upload", "name": "files"}, format="json").json()
    assert client.post(f"{base}{uploaded['id']}/run/").status_code == 400
    schema = client.get("/api/schema/").content.decode()
    assert "/judges/{judge_id}/run/" in schema and "/judges/{judge_id}/cancel/" in schema
