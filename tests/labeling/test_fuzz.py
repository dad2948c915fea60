"""Fuzzing: generated files for every upload and generated bodies for every JSON endpoint.

Whatever arrives, the answer is never a 500, and a refused upload stores nothing (every table
an import writes keeps its row count, the run staging table included). Examples are derived
deterministically (`derandomize`) and bounded, so the suite stays quick and never flaky; the
same tests run on PostgreSQL through `test_postgresql.py`.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from urllib.parse import urlencode

import pytest
from django.contrib.auth.models import AbstractBaseUser
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from labeling.models import Campaign, Document, Judgment, PoolItem, RankingEntry, System, Topic
from tests.url_table import url_table
from uploads.models import StagedRunLine

FUZZ = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
STORED = (Topic, Document, System, RankingEntry, PoolItem, Judgment, StagedRunLine)

# Pieces near each format, so that most examples reach deep into the readers: valid fields,
# awkward ones (over-long, huge numbers, NUL, surrogates, BOM, CRLF, odd whitespace) and junk.
_word = st.sampled_from(
    [
        "1",
        "2",
        "Q0",
        "0",
        "d1",
        "doc-7",
        "-1",
        "3.5",
        "1e999",
        "nan",
        "9" * 30,
        "x" * 70,
        "d" * 210,
        "é",
        "#",
        "",
    ]
)
_space = st.sampled_from([" ", "\t", "  ", "\x0b", "\u00a0"])
_ending = st.sampled_from(["\n", "\r\n", "\r", ""])
_json_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=30),
    st.sampled_from(["1", "d1", "x" * 300, "\x00", "http://e.org/" + "a" * 2040]),
)
_json = st.recursive(
    _json_scalar,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=5)
    ),
    max_leaves=12,
)
_json_object = st.dictionaries(
    st.sampled_from(
        ["id", "qid", "docno", "title", "text", "url", "length", "description", "narrative", "name", "x"]
        # The fields of the API's own bodies, so examples reach the serializers' type checks.
        + ["grade", "preference", "note", "archived", "k", "mode", "goal_k", "budgets", "repetitions"]
        + ["state", "kind", "reason", "budget", "pool_depth"]
    ),
    _json,
    max_size=6,
)


@st.composite
def _columns_file(draw: st.DrawFn, columns: int) -> bytes:
    lines = []
    for _ in range(draw(st.integers(0, 6))):
        width = draw(st.sampled_from([columns] * 4 + [columns - 1, columns + 1, 0]))
        lines.append(draw(_space).join(draw(_word) for _ in range(max(width, 0))) + draw(_ending))
    return _bytes(draw, "".join(lines))


@st.composite
def _jsonl_file(draw: st.DrawFn) -> bytes:
    lines = []
    for _ in range(draw(st.integers(0, 5))):
        kind = draw(st.sampled_from(["object", "object", "value", "junk"]))
        if kind == "object":
            lines.append(json.dumps(draw(_json_object)))
        elif kind == "value":
            lines.append(json.dumps(draw(_json)))
        else:
            lines.append(draw(st.sampled_from(["{", '{"id": "\\ud800"}', "not json", '{"id": 1} x'])))
    return _bytes(draw, draw(_ending).join(lines) or "")


@st.composite
def _trec_topics_file(draw: st.DrawFn) -> bytes:
    parts = []
    for _ in range(draw(st.integers(0, 3))):
        tags = [
            "<top>",
            "<num> Number: " + draw(_word),
            "<title> " + draw(_word),
            "<desc> Description:",
            "</top>",
        ]
        parts.extend(draw(st.permutations(tags)) if draw(st.integers(0, 4)) == 0 else tags)
    return _bytes(draw, "\n".join(parts))


def _bytes(draw: st.DrawFn, text: str) -> bytes:
    if draw(st.booleans()):
        text = "\ufeff" + text
    data = text.encode("utf-8", "surrogatepass")
    trick = draw(st.sampled_from([None, None, None, b"\x00", b"\xff", b"\xed\xa0\x80", "gzip", "gzip-cut"]))
    if trick in ("gzip", "gzip-cut"):
        import gzip

        data = gzip.compress(data)
        return data[: len(data) // 2] if trick == "gzip-cut" else data
    if isinstance(trick, bytes):
        position = draw(st.integers(0, len(data)))
        data = data[:position] + trick + data[position:]
    return data


UPLOADS = {
    "runs": ("runs", None, _columns_file(6)),
    "qrels": ("qrels", None, _columns_file(4)),
    "labels": ("labels", None, _columns_file(5)),
    "topics-trec": ("topics", "trec", _trec_topics_file()),
    "topics-jsonl": ("topics", "jsonl", _jsonl_file()),
    "topics-sniffed": ("topics", None, st.one_of(_jsonl_file(), _trec_topics_file())),
    "documents": ("documents", None, _jsonl_file()),
}


def _counts() -> dict[str, int]:
    return {model.__name__: model.objects.count() for model in STORED}


@pytest.mark.parametrize("upload", list(UPLOADS), ids=list(UPLOADS))
def test_it_never_answers_500_to_a_generated_file_and_stores_nothing_when_it_refuses(
    upload: str, campaign: Campaign, admin: AbstractBaseUser, api: Callable[..., APIClient]
) -> None:
    kind, file_format, files = UPLOADS[upload]
    client = api(admin)

    @FUZZ
    @given(data=files)
    def check(data: bytes) -> None:
        before = _counts()
        body: dict[str, object] = {"file": io.BytesIO(data)}
        body["file"].name = f"fuzz.{kind}"  # type: ignore[attr-defined]
        if file_format:
            body["format"] = file_format
        response = client.post(f"/api/campaigns/{campaign.pk}/{kind}/", body, format="multipart")
        assert response.status_code < 500, (response.status_code, data[:200], response.content[:300])
        if response.status_code >= 400:
            assert _counts() == before, (response.status_code, data[:200], response.content[:300])
        assert StagedRunLine.objects.count() == 0

    check()


def _api_routes() -> list[str]:
    """Every /api/ route of the URL conf, its converters left in (e.g. <id:campaign_id>)."""
    found = ("/" + route.replace("^", "").replace("$", "") for route, _ in url_table())
    return sorted({route for route in found if route.startswith("/api/")})


def test_it_walks_every_api_route() -> None:
    routes = _api_routes()
    assert "/api/tasks/<id:task_id>/answer/" in routes
    assert "/api/campaigns/<id:campaign_id>/" in routes
    assert len(routes) > 20


@pytest.mark.parametrize("persona", ["admin", "assessor", "anonymous"])
def test_it_never_answers_500_to_a_generated_json_body_on_any_endpoint(
    persona: str,
    campaign: Campaign,
    admin: AbstractBaseUser,
    assessor: AbstractBaseUser,
    api: Callable[..., APIClient],
) -> None:
    client = {"admin": api(admin), "assessor": api(assessor), "anonymous": APIClient()}[persona]
    task = api(assessor).get(f"/api/campaigns/{campaign.pk}/next/").json().get("task", 1)
    values = {"campaign_id": campaign.pk, "task_id": task}
    routes = [
        re.sub(r"<(?:\w+:)?(\w+)>", lambda match: str(values.get(match.group(1), 1)), route)
        for route in _api_routes()
    ]

    @settings(FUZZ, max_examples=120)
    @given(
        route=st.sampled_from(routes),
        method=st.sampled_from(["post", "patch", "put"]),
        body=st.one_of(_json_object, _json),
    )
    def check(route: str, method: str, body: object) -> None:
        campaigns, judgments = Campaign.objects.count(), Judgment.objects.count()
        response = getattr(client, method)(route, json.dumps(body), content_type="application/json")
        assert response.status_code < 500, (method, route, body, response.status_code, response.content[:300])
        if response.status_code >= 400:
            assert (Campaign.objects.count(), Judgment.objects.count()) == (campaigns, judgments)

    check()


# Path ids and query values no database key holds, NUL characters, words where numbers go.
_HUGE_ID = "99999999999999999999"
_query_value = st.sampled_from(
    ["", "1", "-1", _HUGE_ID, "999999999999999999", "\x00", "a\x00b", "x" * 300, "1e999"]
)


@pytest.mark.parametrize("persona", ["admin", "assessor"])
def test_it_never_answers_500_to_an_id_or_a_query_no_database_holds(
    persona: str,
    campaign: Campaign,
    admin: AbstractBaseUser,
    assessor: AbstractBaseUser,
    api: Callable[..., APIClient],
) -> None:
    client = {"admin": api(admin), "assessor": api(assessor)}[persona]
    routes = _api_routes()

    @settings(FUZZ, max_examples=120)
    @given(
        route=st.sampled_from(routes),
        method=st.sampled_from(["get", "post"]),
        path_id=st.sampled_from([_HUGE_ID, "999999999999999999", str(campaign.pk)]),
        query=st.dictionaries(
            st.sampled_from(["campaign", "page", "search", "after", "status", "q", "next"]),
            _query_value,
            max_size=3,
        ),
    )
    def check(route: str, method: str, path_id: str, query: dict[str, str]) -> None:
        path = re.sub(r"<(?:\w+:)?(\w+)>", path_id, route)
        judgments = Judgment.objects.count()
        if method == "get":
            response = client.get(path, query)
        else:
            response = client.post(path + "?" + urlencode(query), {}, format="json")
        assert response.status_code < 500, (method, path, query, response.status_code, response.content[:300])
        if response.status_code >= 400:
            assert Judgment.objects.count() == judgments

    check()


_feature_index = st.sampled_from(
    ["1", "2", "0", "-3", "10001", "1000000000000", "9223372036854775808", "²", "x"]
)
_feature_value = st.sampled_from(["0.5", "1e39", "-1e39", "nan", "inf", "", "1"])


@st.composite
def _letor_file(draw: st.DrawFn) -> bytes:
    """LETOR / SVMlight rows near the format: grades, qids and features awkward and plain."""
    lines = []
    for _ in range(draw(st.integers(0, 5))):
        grade = draw(st.sampled_from(["0", "1", "2", "-1", "x", "1.5", "9" * 25, ""]))
        qid = draw(st.sampled_from(["q1", "q2", "", "q" * 300, "é", "\x00"]))
        features = " ".join(
            f"{draw(_feature_index)}:{draw(_feature_value)}" for _ in range(draw(st.integers(0, 3)))
        )
        docid = draw(
            st.sampled_from(["", " # docid = d1", " # docid = d2", " # docid = " + "d" * 500, " # docid"])
        )
        lines.append(f"{grade} qid:{qid} {features}{docid}".strip() + draw(_ending))
    return _bytes(draw, "".join(lines))


def test_it_never_answers_500_to_a_generated_feature_pool_and_stores_nothing_when_it_refuses(
    coordinator: AbstractBaseUser, api: Callable[..., APIClient]
) -> None:
    from labeling.services.campaigns import campaign_create
    from training.models import TrainingPool

    campaign = campaign_create(
        creator=coordinator, name="ltr", grades=["Bad", "Fair", "Good"], budget=5, judging_mode="training"
    )
    client = api(coordinator)

    @FUZZ
    @given(data=_letor_file())
    def check(data: bytes) -> None:
        TrainingPool.objects.filter(campaign=campaign).delete()
        body = {"file": io.BytesIO(data)}
        body["file"].name = "pool.txt"  # type: ignore[attr-defined]
        response = client.post(f"/api/campaigns/{campaign.pk}/training/features/", body, format="multipart")
        assert response.status_code < 500, (response.status_code, data[:200], response.content[:300])
        if response.status_code >= 400:
            assert not TrainingPool.objects.filter(campaign=campaign).exists()

    check()
