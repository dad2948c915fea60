"""Browser fixtures: Debian's chromium driven by Playwright (never a browser download)."""

from __future__ import annotations

import asyncio
import io
import json
import os
import shutil
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import AbstractBaseUser

from demo.loading import demo_load
from labeling.models import Campaign
from labeling.services.campaigns import (
    campaign_assessors_assign,
    campaign_create,
    campaign_start,
)
from operations.accounts import user_create
from tests.database_template import sqlite_test_name
from tests.e2e.helpers import PASSWORD
from uploads.imports import documents_import, topics_import
from uploads.run_imports import runs_import

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str | None:
    """Debian's chromium from PATH or its usual place."""
    found = shutil.which("chromium")
    if found:
        return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").is_file() else None


# Generous enough for a loaded 2-core machine (the whole suite beside the browser): every wait is
# for an event (a response, an element's state, a predicate on the page), so a long timeout costs
# nothing when things go well.
TIMEOUT_MS = 30_000


def _polled_wait_for_function(page: Any) -> Callable[..., Any]:
    """`page.wait_for_function` polled from here with `page.evaluate`. Playwright's own runs
    the predicate through eval inside the page, which the Content-Security-Policy forbids
    (script-src 'self'), while `evaluate` goes through the DevTools protocol, which it does not."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

    def wait_for_function(
        expression: str, *, arg: Any = None, timeout: float | None = None, polling: Any = None
    ) -> Any:
        deadline = time.monotonic() + (TIMEOUT_MS if timeout is None else max(timeout, TIMEOUT_MS)) / 1000
        while True:
            value = page.evaluate(expression, arg)
            if value:
                return value
            if time.monotonic() > deadline:
                raise PlaywrightTimeoutError(f"timed out waiting for {expression}")
            page.wait_for_timeout(50)

    return wait_for_function


class SessionBrowser:
    """One headless chromium for the whole test session (each test gets a context of its own).

    Playwright's sync API marks its event loop as running in this thread between its calls. Other
    tests of the same process (pytest-xdist mixes them) would then see a running loop, and Django
    refuses ORM calls there; so the loop is marked running only while a browser test uses it."""

    def __init__(self, executable: str) -> None:
        from playwright.sync_api import sync_playwright

        self.manager = sync_playwright()
        self.playwright = self.manager.start()
        self.loop = asyncio.get_running_loop()
        self.browser = self.playwright.chromium.launch(
            executable_path=executable, headless=True, args=CHROMIUM_ARGS
        )
        self.park()

    def park(self) -> None:
        """Between browser tests: no running loop in this thread."""
        asyncio._set_running_loop(None)

    def resume(self) -> None:
        """Before a browser test's first call: the loop is Playwright's again."""
        asyncio._set_running_loop(self.loop)

    def close(self) -> None:
        self.resume()
        try:
            self.browser.close()
        finally:
            self.manager.__exit__()
            self.park()


@pytest.fixture(scope="session")
def session_browser() -> Iterator[SessionBrowser]:
    """The session's chromium, started by the first browser test of this process."""
    executable = chromium_path()
    if executable is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is not installed (CI=true: .ci/run installs Debian's chromium package)")
        pytest.skip("chromium not found on PATH or at /usr/bin/chromium (apt-get install chromium)")
    browser = SessionBrowser(executable)
    try:
        yield browser
    finally:
        browser.close()


@pytest.fixture
def browser_page(session_browser: SessionBrowser, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """A page in a fresh browser context (its own cookies and storage) of the session's chromium."""
    from playwright.sync_api import expect

    # Playwright's sync API runs an asyncio loop in this thread; the test's own ORM calls are
    # still synchronous, so Django's async-safety guard must stand aside.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    expect.set_options(timeout=TIMEOUT_MS)
    session_browser.resume()
    context = session_browser.browser.new_context(viewport={"width": 1360, "height": 860})
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    # Every page of every browser test runs under the Content-Security-Policy: a blocked
    # script, style or handler shows as a console error, which fails the test.
    violations: list[str] = []
    page.wait_for_function = _polled_wait_for_function(page)  # type: ignore[method-assign]
    page.on(
        "console",
        lambda message: (
            violations.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    try:
        yield page
    finally:
        try:
            context.close()
        finally:
            session_browser.park()
    assert violations == [], violations


# The demo database of each test database file, kept in memory after its first load.
_demo_snapshots: dict[str, sqlite3.Connection] = {}


@pytest.fixture
def demo_loaded(transactional_db: None) -> None:
    """The generated demo (`demo_load`) in the test database. Loading it judges a history
    through the app (4-7 s); on SQLite it is loaded once per test process and then restored from a
    copy of the database taken right after (SQLite's backup, a few milliseconds), which is the
    state a load gives: every table, sequence and content type as the first load left them."""
    from django.contrib.contenttypes.models import ContentType
    from django.db import connections

    name = sqlite_test_name()
    if name is None:
        demo_load()
        return
    snapshot = _demo_snapshots.get(name)
    connections["default"].close()
    if snapshot is None:
        demo_load()
        connections["default"].close()
        snapshot = sqlite3.connect(":memory:", check_same_thread=False)
        with closing(sqlite3.connect(name)) as database:
            database.backup(snapshot)
        _demo_snapshots[name] = snapshot
        return
    with closing(sqlite3.connect(name, timeout=30)) as database:
        snapshot.backup(database)
    ContentType.objects.clear_cache()


@pytest.fixture
def screenshot_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where screenshots go: $E2E_SCREENSHOT_DIR, else a temporary folder."""
    configured = os.environ.get("E2E_SCREENSHOT_DIR")
    if configured:
        path = Path(configured)
        path.mkdir(parents=True, exist_ok=True)
        return path
    return tmp_path_factory.mktemp("screenshots")


@pytest.fixture
def people(db: None) -> dict[str, AbstractBaseUser]:
    """An assessor (alice) and a coordinator (carl)."""
    return {
        role: user_create(creator=None, username=name, password=PASSWORD, role=role)
        for name, role in (("alice", "assessor"), ("carl", "coordinator"))
    }


# A small running campaign with texts, for the judging pages' tests.
TOPICS = [
    {
        "id": "301",
        "title": "wind turbine noise",
        "description": "Do wind turbines cause noise that harms people living nearby?",
        "narrative": "Relevant documents report measurements or health effects of turbine noise. "
        "Documents about turbine efficiency only are not relevant.",
    },
    {
        "id": "302",
        "title": "coral reef bleaching",
        "description": "What causes coral reefs to bleach, and can they recover?",
        "narrative": "Relevant documents discuss causes of bleaching or recovery of reefs.",
    },
]

DOCUMENTS = [
    (
        "WT-1",
        "Living next to a wind farm",
        "Residents near the turbines reported low-frequency noise at night.\n\n"
        "A survey of 400 households found sleep complaints rose with turbine noise levels above 40 dB.",
    ),
    (
        "WT-2",
        "Turbine blade efficiency",
        "New blade shapes raise the efficiency of wind turbines by 4 percent.",
    ),
    ("WT-3", "Noise limits for wind farms", "Regulators set noise limits of 35 dB at the nearest dwelling."),
    (
        "CR-1",
        "Heat waves bleach reefs",
        "Marine heat waves are the main cause of mass coral bleaching.\n\n"
        "Reefs can recover within a decade if the water stays cool.",
    ),
    ("CR-2", "Reef tourism", "Tourism around coral reefs brings income to coastal towns."),
    ("CR-3", "Recovery after bleaching", "Some corals recovered after the 2016 bleaching event."),
]


def _jsonl(records: list[dict[str, Any]]) -> io.BytesIO:
    return io.BytesIO("".join(json.dumps(record) + "\n" for record in records).encode())


def run_file(tag: str, order: list[str]) -> io.BytesIO:
    lines = []
    for qid, prefix in (("301", "WT"), ("302", "CR")):
        docs = [docno for docno in order if docno.startswith(prefix)]
        lines += [
            f"{qid} Q0 {docno} {rank} {10 - rank}.5 {tag}\n" for rank, docno in enumerate(docs, start=1)
        ]
    return io.BytesIO("".join(lines).encode())


@pytest.fixture
def running_campaign(people: dict[str, AbstractBaseUser]) -> Campaign:
    """Two topics with text, six documents, two runs; alice assigned; running."""
    campaign = campaign_create(
        creator=people["coordinator"],
        name="Energy and oceans",
        metric="DCG@5",
        grades=["Not relevant", "Relevant", "Highly relevant"],
        budget=50,
        budget_unit="judgments",
    )
    topics_import(campaign=campaign, files=[("topics.jsonl", _jsonl(TOPICS))])
    documents = [
        {"docno": d, "title": t, "text": x, "url": "", "length": len(x.split())} for d, t, x in DOCUMENTS
    ]
    documents_import(campaign=campaign, files=[("docs.jsonl", _jsonl(documents))])
    docnos = [docno for docno, _, _ in DOCUMENTS]
    runs_import(
        campaign=campaign,
        files=[("good.run", run_file("good", docnos)), ("poor.run", run_file("poor", docnos[::-1]))],
    )
    campaign_assessors_assign(campaign=campaign, usernames=["alice"])
    return campaign_start(campaign=campaign)
