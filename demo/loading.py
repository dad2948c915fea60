"""The demo the project generates itself: topics with text, documents with hidden grades, three
runs of different quality, and one user per role; each judging mode's app adds its demo campaign
on this collection (`register_demo`)."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import transaction

from labeling.models import Campaign
from labeling.permissions import ROLE_ADMIN, ROLE_ASSESSOR, ROLE_COORDINATOR, role_group
from labeling.services.campaigns import (
    campaign_assessors_assign,
    campaign_create,
    campaign_start,
)
from uploads.imports import documents_import, topics_import
from uploads.run_imports import runs_import

DEMO_PASSWORD = "labeling-demo"
DEMO_USERS = (
    ("demo-admin", ROLE_ADMIN),
    ("demo-coordinator", ROLE_COORDINATOR),
    ("demo-assessor", ROLE_ASSESSOR),
    ("demo-assessor2", ROLE_ASSESSOR),
)
DOCUMENTS_PER_TOPIC = 30
RUN_DEPTH = 20
# Run name -> noise of its scores around the hidden grade: a good, a fair and a poor system.
RUN_NOISE = {"bm25-tuned": 0.6, "bm25-default": 1.4, "random-walk": 4.0}


@dataclass(frozen=True)
class DemoTopic:
    qid: str
    title: str
    description: str
    narrative: str
    terms: tuple[str, ...]


TOPICS = (
    DemoTopic(
        "501",
        "urban heat islands",
        "How do cities reduce the urban heat island effect?",
        "Relevant documents describe measures such as green roofs, trees or reflective surfaces and their "
        "measured effect on city temperatures. General climate news is not relevant.",
        ("heat island", "green roofs", "street trees", "surface temperature", "reflective pavement"),
    ),
    DemoTopic(
        "502",
        "bicycle lanes safety",
        "Do protected bicycle lanes reduce injuries?",
        "Relevant documents report injury or crash data before and after protected lanes were built. "
        "Opinion pieces without data are somewhat relevant at best.",
        ("protected lanes", "cyclist injuries", "crash data", "bike infrastructure", "traffic calming"),
    ),
    DemoTopic(
        "503",
        "rainwater harvesting",
        "Household rainwater harvesting systems and their water savings.",
        "Relevant documents quantify the water a household saves by collecting rain. Industrial "
        "water treatment is not relevant.",
        ("rainwater", "water tank", "household savings", "gutter collection", "drought"),
    ),
    DemoTopic(
        "504",
        "district heating",
        "Efficiency of district heating networks in northern Europe.",
        "Relevant documents compare the efficiency or emissions of district heating with individual "
        "boilers or heat pumps.",
        ("district heating", "heat pumps", "emissions", "combined heat and power", "insulation"),
    ),
    DemoTopic(
        "505",
        "urban farming",
        "Rooftop and vertical farms supplying city food markets.",
        "Relevant documents describe urban farms that sell produce locally, with yields or costs. "
        "Home gardening tips are not relevant.",
        ("vertical farm", "rooftop garden", "local produce", "crop yields", "hydroponics"),
    ),
    DemoTopic(
        "506",
        "noise pollution",
        "Health effects of traffic noise in dense neighbourhoods.",
        "Relevant documents link measured traffic noise to sleep, stress or cardiovascular outcomes.",
        ("traffic noise", "sleep disturbance", "decibel levels", "cardiovascular risk", "noise barriers"),
    ),
)
FILLER = (
    "city council",
    "budget",
    "public transport",
    "housing market",
    "tourism",
    "football club",
    "local elections",
    "museum exhibition",
    "school reform",
    "weather forecast",
    "shopping centre",
    "parking fees",
    "festival",
    "library hours",
    "road works",
)
TEMPLATES = (
    "Researchers reported new findings on {a} and {b}.",
    "The report discusses {a} in the context of {b}.",
    "Local officials commented on {a}, citing recent work on {b}.",
    "{A} has been linked to {b} in several studies.",
    "Critics argue that the attention paid to {a} distracts from {b}.",
    "A survey of residents asked about {a} and {b}.",
)


def _sentence(rng: np.random.Generator, topic: DemoTopic, grade: int) -> str:
    on_topic = rng.random() < (0.1, 0.35, 0.6, 0.85)[grade]
    pool = topic.terms if on_topic else FILLER
    a, b = rng.choice(len(pool), size=2, replace=False)
    template = TEMPLATES[int(rng.integers(len(TEMPLATES)))]
    return template.format(a=pool[a], b=pool[b], A=pool[a].capitalize())


def demo_collection(
    seed: int = 2024,
) -> tuple[list[dict], list[dict], dict[str, str], dict[tuple[str, str], int]]:
    """Topics, documents, runs (name -> TREC text) and the hidden grades, from a seeded RNG."""
    rng = np.random.default_rng(seed)
    topics = [
        {"id": t.qid, "title": t.title, "description": t.description, "narrative": t.narrative}
        for t in TOPICS
    ]
    documents: list[dict] = []
    grades: dict[tuple[str, str], int] = {}
    for topic in TOPICS:
        for number in range(DOCUMENTS_PER_TOPIC):
            grade = int(rng.choice(4, p=[0.45, 0.25, 0.2, 0.1]))
            docno = f"CITY-{topic.qid}-{number:03d}"
            text = " ".join(_sentence(rng, topic, grade) for _ in range(int(rng.integers(4, 9))))
            head = (
                topic.terms[int(rng.integers(len(topic.terms)))]
                if grade >= 2
                else FILLER[int(rng.integers(len(FILLER)))]
            )
            documents.append(
                {"docno": docno, "title": f"{head.capitalize()}: notes from the city desk", "text": text}
            )
            grades[(topic.qid, docno)] = grade
    runs: dict[str, str] = {}
    for name, noise in RUN_NOISE.items():
        lines = []
        for topic in TOPICS:
            docnos = [docno for (qid, docno) in grades if qid == topic.qid]
            scores = np.array([grades[(topic.qid, docno)] for docno in docnos]) + noise * rng.normal(
                size=len(docnos)
            )
            for rank, index in enumerate(np.argsort(-scores)[:RUN_DEPTH], start=1):
                lines.append(f"{topic.qid} Q0 {docnos[index]} {rank} {scores[index]:.4f} {name}\n")
        runs[name] = "".join(lines)
    return topics, documents, runs, grades


def _demo_user(username: str, role: str) -> User:
    user, _ = get_user_model().objects.get_or_create(username=username)
    user.set_password(DEMO_PASSWORD)  # demo accounts only: a known, printed password
    user.is_staff = user.is_superuser = role == ROLE_ADMIN
    user.save()
    user.groups.add(role_group(role))
    return user


def _jsonl(records: list[dict]) -> io.BytesIO:
    return io.BytesIO("".join(json.dumps(record) + "\n" for record in records).encode())


# Demo campaigns, one per judging mode: each app registers a loader from its ready() (in the
# order of INSTALLED_APPS); the loader creates its campaign unless it exists and returns it.
_app_demos: list[Callable[[], Campaign]] = []


def register_demo(loader: Callable[[], Campaign]) -> None:
    """Add an app's demo campaign to `manage.py demo` (call once, from the app's ready())."""
    if loader not in _app_demos:
        _app_demos.append(loader)


def demo_load() -> tuple[list[Campaign], bool]:
    """Create the demo users and every app's demo campaign unless they exist: (the campaigns, in
    the apps' order, the graded one first; whether any was created now)."""
    with transaction.atomic():
        for username, role in DEMO_USERS:
            _demo_user(username, role)
    before = Campaign.objects.count()
    campaigns = [loader() for loader in _app_demos]
    return campaigns, Campaign.objects.count() > before


DEMO_GRADES = [
    {"name": "Bad", "key": "0"},
    {"name": "Fair", "key": "1"},
    {"name": "Good", "key": "2"},
    {"name": "Excellent", "key": "3"},
]


def demo_campaign_draft(name: str, **fields: Any) -> tuple[Campaign, bool]:
    """The demo campaign of this name: (it, False) when it exists, else (a new draft by
    demo-coordinator with these fields, True)."""
    existing = Campaign.objects.filter(name=name).first()
    if existing is not None:
        return existing, False
    coordinator = get_user_model().objects.get(username="demo-coordinator")
    return campaign_create(creator=coordinator, name=name, **fields), True


def demo_fill_and_start(
    campaign: Campaign,
    topics_limit: int | None = None,
    before_start: Callable[[Campaign], None] | None = None,
) -> Campaign:
    """Import the demo collection (its first `topics_limit` topics), run `before_start` (e.g. a
    judge's labels), assign the demo assessors and start judging."""
    topics, documents, runs, _ = demo_collection()
    if topics_limit is not None:
        kept = {topic["id"] for topic in topics[:topics_limit]}
        topics = [topic for topic in topics if topic["id"] in kept]
        runs = {
            name: "".join(line for line in text.splitlines(keepends=True) if line.split(" ", 1)[0] in kept)
            for name, text in runs.items()
        }
    demo_texts_import(campaign, topics, documents)
    runs_import(
        campaign=campaign, files=[(f"{name}.run", io.BytesIO(text.encode())) for name, text in runs.items()]
    )
    if before_start is not None:
        before_start(campaign)
    return demo_assign_and_start(campaign)


def demo_texts_import(campaign: Campaign, topics: list[dict], documents: list[dict]) -> None:
    """The demo collection's topics and documents (what assessors read) into a campaign."""
    topics_import(campaign=campaign, files=[("topics.jsonl", _jsonl(topics))])
    documents_import(campaign=campaign, files=[("documents.jsonl", _jsonl(documents))])


def demo_assign_and_start(campaign: Campaign) -> Campaign:
    """The demo assessors on the campaign, and judging started."""
    campaign_assessors_assign(
        campaign=campaign, usernames=[name for name, role in DEMO_USERS if role == ROLE_ASSESSOR]
    )
    return campaign_start(campaign=campaign)


def demo_logins() -> str:
    """The demo accounts as printable lines."""
    return "\n".join(f"  {role:<12} {username} / {DEMO_PASSWORD}" for username, role in DEMO_USERS)
