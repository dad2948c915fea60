"""Personas (assessor, coordinator, admin, outsider) and a small running campaign."""

from __future__ import annotations

import io
import os
import shutil
from collections.abc import Callable, Iterator

import pytest
from django.contrib.auth.models import AbstractBaseUser
from rest_framework.test import APIClient

from config.celery import app as celery_app
from labeling.models import Campaign
from labeling.services.campaigns import (
    campaign_assessors_assign,
    campaign_create,
    campaign_start,
    user_create,
)
from labeling.services.run_imports import runs_import
from tests.labeling.workers import celery_worker, worker  # noqa: F401  (fixtures)
from tests.servers import postgres_url, redis_url  # noqa: F401  (fixtures)

# Unit tests never talk to a broker: enqueued recomputes go to an in-memory transport. The
# integration tests in test_celery.py point a real worker at a real Redis instead.
celery_app.conf.broker_url = "memory://"
celery_app.conf.broker_transport_options = {}

PASSWORD = "correct-horse-battery-42"

# Three topics; two runs of five documents each that overlap on some documents.
RUN_A = "".join(f"{q} Q0 d{q}-{d} {d} {10 - d}.0 alpha\n" for q in (1, 2, 3) for d in range(1, 6))
RUN_B = "".join(f"{q} Q0 d{q}-{d} {d - 2} {20 - d}.0 beta\n" for q in (1, 2, 3) for d in range(3, 8))


def upload(name: str, text: str | bytes) -> tuple[str, io.BytesIO]:
    """An in-memory upload as the services take it."""
    return name, io.BytesIO(text.encode() if isinstance(text, str) else text)


@pytest.fixture
def make_user(db: None) -> Callable[..., AbstractBaseUser]:
    def make(username: str, role: str | None) -> AbstractBaseUser:
        if role is None:
            from django.contrib.auth import get_user_model

            return get_user_model().objects.create_user(username=username, password=PASSWORD)
        return user_create(creator=None, username=username, password=PASSWORD, role=role)

    return make


@pytest.fixture
def admin(make_user: Callable[..., AbstractBaseUser]) -> AbstractBaseUser:
    return make_user("ada", "admin")


@pytest.fixture
def coordinator(make_user: Callable[..., AbstractBaseUser]) -> AbstractBaseUser:
    return make_user("carl", "coordinator")


@pytest.fixture
def assessor(make_user: Callable[..., AbstractBaseUser]) -> AbstractBaseUser:
    return make_user("alice", "assessor")


@pytest.fixture
def second_assessor(make_user: Callable[..., AbstractBaseUser]) -> AbstractBaseUser:
    return make_user("bob", "assessor")


@pytest.fixture
def outsider(make_user: Callable[..., AbstractBaseUser]) -> AbstractBaseUser:
    return make_user("oscar", None)


@pytest.fixture
def draft_campaign(coordinator: AbstractBaseUser) -> Campaign:
    """A campaign with two runs imported, not started."""
    campaign = campaign_create(
        creator=coordinator,
        name="toy",
        metric="DCG@5",
        grades=["Bad", "Fair", "Good"],
        budget=100,
        budget_unit="judgments",
    )
    runs_import(campaign=campaign, files=[upload("a.run", RUN_A), upload("b.run", RUN_B)])
    return campaign


@pytest.fixture
def campaign(
    draft_campaign: Campaign, assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> Campaign:
    """The toy campaign, running, with both assessors assigned."""
    campaign_assessors_assign(campaign=draft_campaign, usernames=["alice", "bob"])
    return campaign_start(campaign=draft_campaign)


@pytest.fixture
def api() -> Callable[[AbstractBaseUser | None], APIClient]:
    def client_for(user: AbstractBaseUser | None) -> APIClient:
        client = APIClient()
        if user is not None:
            client.force_authenticate(user=None)
            client.force_login(user)
        return client

    return client_for


@pytest.fixture(scope="session", autouse=True)
def remove_sqlite_journal_files() -> Iterator[None]:
    """Django deletes the SQLite test database file at the end, but not its WAL side files nor
    the recompute locks' folder beside it (labeling/recompute_lock.py)."""
    yield
    from django.conf import settings

    name = str(settings.DATABASES["default"].get("TEST", {}).get("NAME") or "")
    for suffix in ("-wal", "-shm"):
        if name and os.path.exists(name + suffix) and not os.path.exists(name):
            os.remove(name + suffix)
    if name and not os.path.exists(name):
        shutil.rmtree(name + ".locks", ignore_errors=True)


@pytest.fixture(autouse=True)
def pool_array_cache_in_tmp(settings: object, tmp_path: object) -> Iterator[None]:
    """Each test's pool-array cache files live in its own temporary folder."""
    from sampling.pool_arrays import pool_arrays_forget

    settings.VAR_DIR = tmp_path  # type: ignore[attr-defined]
    yield
    pool_arrays_forget()
