"""The data model: campaigns, what is judged (topics, documents, systems' rankings, the pool),
what was sampled (draws), who works on what (members, leased tasks) and the judgments."""

from __future__ import annotations

import secrets
from typing import ClassVar

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.text import Truncator


def _random_seed() -> int:
    return secrets.randbits(62)


def default_grades() -> list[dict[str, str]]:
    """The default four-level scale, lowest first, with digit keys."""
    names = ["Not relevant", "Somewhat relevant", "Relevant", "Highly relevant"]
    return [{"name": name, "key": str(value)} for value, name in enumerate(names)]


class Campaign(models.Model):
    """A judging campaign: what to estimate, how to judge, how much to spend."""

    class Goal(models.TextChoices):
        ONE = "one", "Evaluate one system"
        DIFFERENCE = "difference", "Compare two systems"
        LEADERBOARD = "leaderboard", "Leaderboard of k systems"
        RELATIVE = "relative", "k systems relative to their mean"

    class BudgetUnit(models.TextChoices):
        COST = "cost", "Cost units"
        JUDGMENTS = "judgments", "Judgments"
        HOURS = "hours", "Assessor-hours"

    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        RUNNING = "running", "Running"
        PAUSED = "paused", "Paused"
        DONE = "done", "Done"

    SETTINGS: ClassVar[tuple[str, ...]] = (
        "metric",
        "grades",
        "judging_mode",
        "custom_dcg",
        "goal",
        "goal_k",
        "strategy",
        "budget",
        "budget_unit",
        "overlap",
        "pool_depth",
        "lease_seconds",
        "mix",
        "focus_systems",
        "prior_strength",
        "verdict_rule",
        "verdict_question",
        "verdict_margin",
    )
    """What a coordinator chooses about a campaign beyond its name and guidelines (a mode's own
    settings live in its tables): a clone copies these, the configuration export and the
    campaign API show every one (tests/labeling/test_campaign_settings.py)."""

    name = models.CharField(max_length=200)
    metric = models.CharField(max_length=32, default="DCG@10", help_text="e.g. DCG@10, nDCG@10, ERR@10")
    grades = models.JSONField(default=default_grades, help_text="[{name, key}], lowest grade first")
    # The one place the mode is stored; its settings live in the mode's own tables. The modes are
    # plug-ins registered above the models (labeling.modes), so the services check the name
    # (`mode_named`) rather than a choices list fixed here.
    judging_mode = models.CharField(max_length=16, default="graded")
    custom_dcg = models.JSONField(
        null=True,
        blank=True,
        default=None,
        help_text="{gains, discounts, source}: DCG and nDCG with these gains per grade and discounts "
        "per position (e.g. learned from a side-by-side campaign); empty = 2^y - 1 and 1/log2(1+k)",
    )
    guidelines = models.TextField(
        blank=True, default="", help_text="instructions for assessors, in Markdown (shown on the judge page)"
    )
    goal = models.CharField(max_length=16, choices=Goal.choices, default=Goal.ONE)
    goal_k = models.PositiveIntegerField(null=True, blank=True, help_text="k for a leaderboard goal")
    # A sampling strategy's name (`sampling.strategies`, registered by the engine above the
    # models): checked by the campaign's mode (`JudgingMode.validate`), as `judging_mode` is.
    strategy = models.CharField(max_length=32, default="passive")
    budget = models.FloatField(default=100.0)
    budget_unit = models.CharField(max_length=16, choices=BudgetUnit.choices, default=BudgetUnit.JUDGMENTS)
    overlap = models.PositiveSmallIntegerField(default=1, help_text="judgments per item")
    pool_depth = models.PositiveIntegerField(
        null=True, blank=True, help_text="pool the top-d of every run; empty = the metric's cutoff"
    )
    lease_seconds = models.PositiveIntegerField(default=600)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.DRAFT)
    seed = models.BigIntegerField(default=_random_seed, help_text="seeds the sampler, so draws replay")
    mix = models.FloatField(
        default=0.1, help_text="weight of the passive/uniform component in the sampling distribution"
    )

    class VerdictRule(models.TextChoices):
        SEQUENTIAL = "sequential", "Sequential: read after every label, spread over the planned top-up"
        ANYTIME = "anytime", "Anytime: read after every label, no horizon (the budget may grow)"
        FIXED = "fixed", "Fixed: read once, when the top-up is spent"

    class VerdictQuestion(models.TextChoices):
        DIFFERENCE = "difference", "Better or worse"
        NON_INFERIORITY = "non_inferiority", "Not worse by more than the margin"
        SUPERIORITY = "superiority", "Better by more than the margin"

    # The defaults of every release verdict of the campaign (`estimation.sampling.verdicts`): a run
    # that arrives takes them unless its submission names its own; a two-system campaign's verdict
    # reads them, and they are fixed once its first label is stored (`sampling.verdict_plans`).
    verdict_rule = models.CharField(
        max_length=12,
        choices=VerdictRule.choices,
        default=VerdictRule.SEQUENTIAL,
        help_text="how a run that arrives, or a two-system campaign, gets its verdict",
    )
    verdict_question = models.CharField(
        max_length=16,
        choices=VerdictQuestion.choices,
        default=VerdictQuestion.DIFFERENCE,
        help_text="what the verdict answers about the difference (first run minus second)",
    )
    verdict_margin = models.FloatField(
        default=0.0, help_text="the margin of a non-inferiority or superiority question, in metric units"
    )
    focus_systems = models.JSONField(
        default=list, blank=True, help_text="system names the sampling plans for; empty = all pooled systems"
    )
    prior_strength = models.FloatField(
        default=20.0, help_text="pseudo-count of the default prior in the label model"
    )
    pool_version = models.PositiveIntegerField(
        default=0, help_text="bumped by every import that changes the pool"
    )
    blocked = models.CharField(
        max_length=32, blank=True, default="", help_text="why no more draws are made (e.g. 'budget')"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    gold_active = models.BooleanField(
        default=False, help_text="gold questions are mixed in (graded.gold keeps this)"
    )
    archived_at = models.DateTimeField(
        null=True, blank=True, help_text="set: out of the work lists (the campaign list's Archived filter)"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        permissions = [
            ("judge_campaign", "Can judge items of the campaign"),
            ("manage_campaign", "Can import, budget, assign and start or pause the campaign"),
            ("view_campaign_results", "Can see the campaign's dashboard, estimates and all labels"),
            ("export_campaign", "Can export the campaign's judgments and configuration"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def grade_count(self) -> int:
        """Number of grades on the scale."""
        return len(self.grades)

    @property
    def metric_cutoff(self) -> int:
        """K of the metric name (DCG@K)."""
        from estimation.metrics.spec import Metric

        return Metric.parse(self.metric, y_max=max(1, self.grade_count - 1)).cutoff

    @property
    def effective_pool_depth(self) -> int:
        """The pool depth: explicit, or the metric's cutoff."""
        return self.pool_depth or self.metric_cutoff


class CampaignMember(models.Model):
    """A user's role in one campaign: the object permission the app checks."""

    class Role(models.TextChoices):
        ASSESSOR = "assessor", "Assessor"
        COORDINATOR = "coordinator", "Coordinator"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="members")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="campaign_roles"
    )
    role = models.CharField(max_length=16, choices=Role.choices)
    added_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["campaign", "user"], name="member_once_per_campaign")]

    def __str__(self) -> str:
        return f"{self.user} as {self.role} in {self.campaign}"


class AssessorPreferences(models.Model):
    """One user's judging preferences: keyboard shortcuts on or off, and keys they remapped
    ({action: key}, only those that differ from the defaults of `labeling.modes.shortcut_actions()`)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assessor_preferences"
    )
    shortcuts_enabled = models.BooleanField(default=True)
    shortcut_keys = models.JSONField(default=dict, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "assessor preferences"

    def __str__(self) -> str:
        return f"preferences of {self.user}"


class Topic(models.Model):
    """A query with its TREC fields; a stub when only runs or qrels named it."""

    # No index of its own: the unique (campaign, qid) index leads with the campaign, and a second
    # index on the campaign alone let PostgreSQL, planning from statistics a bulk import had
    # outgrown, pick it for a lookup by qid and read every topic of the campaign per row.
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="topics", db_index=False)
    qid = models.CharField(max_length=64)
    title = models.TextField(blank=True)
    description = models.TextField(blank=True)
    narrative = models.TextField(blank=True)
    is_stub = models.BooleanField(default=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["campaign", "qid"], name="topic_qid_unique")]
        ordering = ["campaign", "qid"]

    def __str__(self) -> str:
        # An excerpt: the admin shows this wherever a topic is named (lists, choices, deletions).
        return f"{self.qid}: {Truncator(self.title).chars(80)}" if self.title else self.qid


class Document(models.Model):
    """A document; a stub (judged by docno or URL) when runs name it but no upload gave it."""

    # No index of its own, as for Topic: the unique (campaign, docno) index serves both lookups.
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="documents", db_index=False)
    docno = models.CharField(max_length=200)
    title = models.TextField(blank=True)
    text = models.TextField(blank=True)
    url = models.URLField(max_length=2000, blank=True)
    length = models.PositiveIntegerField(null=True, blank=True)
    is_stub = models.BooleanField(default=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["campaign", "docno"], name="document_docno_unique")]

    def __str__(self) -> str:
        return self.docno


class System(models.Model):
    """A system under evaluation: one imported run."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="systems")
    name = models.CharField(max_length=200)
    filename = models.CharField(max_length=500, blank=True)
    evaluation_only = models.BooleanField(
        default=False, help_text="uploaded to be evaluated on the stored draws; not pooled, not sampled"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["campaign", "name"], name="system_name_unique")]
        ordering = ["campaign", "name"]

    def __str__(self) -> str:
        return self.name


class RankingEntry(models.Model):
    """One line of a run: the system ranked this document for this topic.

    No foreign-key constraints in the database: checking three of them per row took
    PostgreSQL longer than inserting the row (a million-line import spent 40% of its time in
    the checks at commit). The rows are written only by the run import, from a join with the
    system, topic and document rows (`services.run_import_writes`), and deleted with them by
    Django's cascade; every read goes through the system.
    """

    # The index of ranking_entry_unique serves lookups by system.
    system = models.ForeignKey(
        System, on_delete=models.CASCADE, related_name="entries", db_constraint=False, db_index=False
    )
    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="+", db_constraint=False)
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+", db_constraint=False)
    rank = models.IntegerField(help_text="the rank column as given (trec_eval orders by score instead)")
    score = models.FloatField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["system", "topic", "document"], name="ranking_entry_unique")
        ]
        verbose_name_plural = "ranking entries"

    def __str__(self) -> str:
        return f"{self.system_id}/{self.topic_id}/{self.document_id}@{self.rank}"


class PoolItem(models.Model):
    """A (topic, document) pair some run ranks within the pool depth: what can be sampled."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="pool_items")
    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="+")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+")
    best_rank = models.PositiveIntegerField(help_text="best position any run gives it (trec_eval order)")
    cost = models.FloatField(default=1.0)
    prejudged = models.BooleanField(default=False, help_text="imported qrels judge it already")
    drawn = models.BooleanField(default=False)
    prior = models.JSONField(
        null=True, blank=True, help_text="imported prior probabilities of grades 0..y_max"
    )
    # A run pooled after draws were made brings items no earlier draw could pick: their share of
    # any system's metric is estimated from the later draws only (estimation.sampling.arrivals).
    drawable_after = models.PositiveIntegerField(
        default=0,
        help_text="the order of the last draw made before the item joined the pool (0: none)",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["campaign", "topic", "document"], name="pool_item_unique")
        ]
        indexes = [models.Index(fields=["campaign", "drawn", "prejudged"], name="pool_item_undrawn")]

    def __str__(self) -> str:
        return f"{self.topic_id}/{self.document_id}"


class Draw(models.Model):
    """One sampling step: the topic (query level) or item (item level) the strategy picked, when,
    and with which probability; `cost` is what the tasks it created were predicted to cost."""

    class Kind(models.TextChoices):
        QUERY = "query", "Topic (every pool item of it)"
        ITEM = "item", "One (topic, document) pair"
        # A gold question shown to one assessor: never an estimator's draw (they read QUERY or
        # ITEM draws only), and its answer is a GoldAnswer, never a Judgment.
        GOLD = "gold", "Gold question"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="draws")
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.ITEM)
    pool_item = models.ForeignKey(
        PoolItem, null=True, blank=True, on_delete=models.CASCADE, related_name="draws"
    )
    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="+")
    document = models.ForeignKey(Document, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    order = models.PositiveIntegerField(help_text="1, 2, ... within the campaign")
    propensity = models.FloatField(help_text="probability of picking this topic or item at this step")
    strategy = models.CharField(max_length=32)
    cost = models.FloatField(default=0.0, help_text="predicted cost of the new tasks (budget unit)")
    sampling_version = models.PositiveIntegerField(default=0, help_text="the sampling state drawn from")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["campaign", "order"], name="draw_order_unique")]
        ordering = ["campaign", "order"]

    def __str__(self) -> str:
        return f"draw {self.order} of campaign {self.campaign_id}"


class Arrival(models.Model):
    """A run pooled into a campaign that had already drawn, with a human top-up to estimate it:
    its items new to the pool are drawable only after `drawable_after` (their share is estimated
    from the later draws; `estimation.sampling.arrivals`), and while the top-up is not spent the
    sampling aims at its difference with the reference (`sampling.arrivals`)."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="arrivals")
    system = models.OneToOneField(System, on_delete=models.CASCADE, related_name="arrival")
    reference = models.ForeignKey(
        System, null=True, on_delete=models.SET_NULL, related_name="+", help_text="what it is compared with"
    )
    reference_given = models.BooleanField(
        default=True, help_text="named by the submission (else the best certified pooled run was taken)"
    )
    topup_budget = models.FloatField(help_text="what the top-up spends on it, in the campaign's budget unit")
    topup_draws = models.PositiveIntegerField(
        default=1, help_text="the draws the top-up budget pays for on average (its design is made for them)"
    )
    target_width = models.FloatField(
        null=True, blank=True, help_text="the 95 % interval width asked for (the budget was planned for it)"
    )
    planned_width = models.FloatField(
        null=True, blank=True, help_text="the width the planner predicted for the top-up budget"
    )
    drawable_after = models.PositiveIntegerField(help_text="the order of the last draw before it was pooled")
    created_at = models.DateTimeField(auto_now_add=True)
    report = models.JSONField(
        null=True,
        blank=True,
        help_text="its report as the worker last computed it (sampling.arrivals)",
    )
    report_at = models.DateTimeField(null=True, blank=True, help_text="when `report` was computed")

    class Meta:
        ordering = ("id",)

    def __str__(self) -> str:
        return f"{self.system_id} in {self.campaign_id}"


class Verdict(models.Model):
    """A release verdict and the plan it is read by: of a run that arrived (its difference with
    its reference) or of a two-system campaign (its compared pair; `arrival` empty). The plan
    (rule, question, margin, horizon) is stored when the verdict is opened and fixed once a
    label counts towards it (`plan_fixed_at`); the reading is stored once
    (`sampling.verdicts`)."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="verdicts")
    arrival = models.OneToOneField(
        Arrival, null=True, blank=True, on_delete=models.CASCADE, related_name="verdict_record"
    )
    first = models.CharField(max_length=200, help_text="the run whose difference is read (minus the second)")
    second = models.CharField(max_length=200, help_text="what it is compared with")
    rule = models.CharField(max_length=12, choices=Campaign.VerdictRule.choices)
    question = models.CharField(
        max_length=16, choices=Campaign.VerdictQuestion.choices, default=Campaign.VerdictQuestion.DIFFERENCE
    )
    margin = models.FloatField(default=0.0, help_text="metric units")
    horizon = models.FloatField(
        help_text="the planned top-up, in labels: the sequential rule spends alpha over it"
    )
    budget = models.FloatField(
        default=0.0,
        help_text="the top-up (or budget) the plan was made for, in the budget unit",
    )
    alpha = models.FloatField(default=0.05)
    plan_fixed_at = models.DateTimeField(
        null=True, blank=True, help_text="when a label first counted: the plan cannot change after"
    )

    class Outcome(models.TextChoices):
        BETTER = "better", "Better"
        WORSE = "worse", "Worse"
        NOT_WORSE = "not_worse", "Not worse"
        NOT_BETTER = "not_better", "Not better"
        NOT_SETTLED = "not_settled", "Not settled"
        UNCHANGED = "unchanged", "Unchanged"

    outcome = models.CharField(
        max_length=12, choices=Outcome.choices, blank=True, default="", help_text="empty until decided"
    )
    decided_at = models.DateTimeField(null=True, blank=True, help_text="when the reading was stored")
    decided_draws = models.PositiveIntegerField(
        null=True, blank=True, help_text="top-up draws at the look read"
    )
    decided_labels = models.PositiveIntegerField(
        null=True, blank=True, help_text="top-up labels (documents judged) at the look read"
    )
    value = models.FloatField(null=True, blank=True, help_text="the difference at that look")
    low = models.FloatField(null=True, blank=True, help_text="the interval the rule read there")
    high = models.FloatField(null=True, blank=True)
    reason = models.CharField(max_length=400, blank=True, default="", help_text="why it is not settled")
    returned = models.FloatField(
        default=0.0, help_text="budget taken off when the verdict came before the top-up was spent"
    )

    class Meta:
        ordering = ("id",)
        constraints = [
            models.UniqueConstraint(
                fields=["campaign"], condition=Q(arrival__isnull=True), name="one_campaign_verdict"
            )
        ]

    def __str__(self) -> str:
        return f"{self.first} vs {self.second}: {self.outcome or 'open'}"


class Task(models.Model):
    """One judgment slot of a draw (overlap slots per draw), leased to one assessor until expiry."""

    class Kind(models.TextChoices):
        GRADE = "grade", "Grade"
        # A gold question (graded.gold): served as a grade item, answered as a
        # GoldAnswer.
        GOLD = "gold", "Gold question"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="tasks")
    draw = models.ForeignKey(Draw, on_delete=models.CASCADE, related_name="tasks")
    pool_item = models.ForeignKey(PoolItem, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    slot = models.PositiveSmallIntegerField(default=0)
    order = models.PositiveIntegerField(help_text="the draw's order: tasks are served in draw order")
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.GRADE)
    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="+")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+")
    assessor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="tasks"
    )
    # The run that arrived whose top-up drew it (`sampling.arrival_design`): its judgments are
    # that arrival's top-up, whoever else arrived at the same moment.
    arrival = models.ForeignKey(
        "Arrival", null=True, blank=True, on_delete=models.SET_NULL, related_name="topup_tasks"
    )
    leased_at = models.DateTimeField(null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    answered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["draw", "document", "slot"], name="task_draw_document_slot_unique"
            )
        ]
        indexes = [
            models.Index(fields=["campaign", "answered_at", "order"], name="task_open"),
            models.Index(fields=["assessor", "answered_at"], name="task_assessor"),
            # The count of active assessors (the queue grows with them) reads recent leases.
            models.Index(fields=["campaign", "leased_at"], name="task_recent_lease"),
        ]

    def __str__(self) -> str:
        return f"task {self.pk} (draw {self.order}, slot {self.slot})"


class Judgment(models.Model):
    """A grade for a (topic, document): from an assessor answering a task, or from imported qrels."""

    class Source(models.TextChoices):
        ASSESSOR = "assessor", "Assessor"
        QRELS = "qrels", "Imported qrels"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="judgments")
    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="+")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+")
    assessor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="judgments"
    )
    grade = models.PositiveSmallIntegerField()
    seconds = models.FloatField(null=True, blank=True, help_text="time spent, pauses excluded")
    cost = models.FloatField(default=1.0)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.ASSESSOR)
    task = models.OneToOneField(
        Task, null=True, blank=True, on_delete=models.SET_NULL, related_name="judgment"
    )
    draw = models.ForeignKey(Draw, null=True, blank=True, on_delete=models.SET_NULL, related_name="judgments")
    note = models.TextField(blank=True, db_default="", help_text="the assessor's note on this judgment")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "topic", "document"],
                condition=Q(source="qrels"),
                name="qrels_judgment_unique",
            )
        ]
        indexes = [models.Index(fields=["campaign", "created_at"], name="judgment_campaign_time")]

    def __str__(self) -> str:
        return f"{self.topic_id}/{self.document_id} = {self.grade}"


class CampaignProgress(models.Model):
    """Counts the recompute task records after judgments, for dashboards."""

    campaign = models.OneToOneField(Campaign, on_delete=models.CASCADE, related_name="progress")
    judgments = models.PositiveIntegerField(default=0)
    spent = models.FloatField(default=0.0)
    pool_size = models.PositiveIntegerField(default=0)
    drawn = models.PositiveIntegerField(default=0)
    open_tasks = models.PositiveIntegerField(default=0)
    recomputed_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "campaign progress"

    def __str__(self) -> str:
        return f"progress of {self.campaign_id}"


class Skip(models.Model):
    """An assessor passed an item on, and why: the item goes back for someone else, and never to
    this assessor again. `kind` and `unit` name what was skipped in the mode's own terms (a graded
    task, a pair task); topic and document, when the unit is one item, keep its other overlap
    copies from this assessor too."""

    class Reason(models.TextChoices):
        CANNOT_JUDGE = "cannot_judge", "Cannot judge"
        NOT_SURE = "not_sure", "Not sure"
        BROKEN = "broken", "Document broken"
        OTHER = "other", "Other"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="skips")
    assessor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="skips"
    )
    kind = models.CharField(max_length=16, help_text="the task_kind of the mode's item, e.g. grade, pair")
    unit = models.PositiveBigIntegerField(help_text="the skipped unit's id in its mode's table")
    topic = models.ForeignKey(Topic, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    document = models.ForeignKey(Document, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    reason = models.CharField(max_length=16, choices=Reason.choices)
    note = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            models.Index(fields=["campaign", "assessor", "topic", "document"], name="skip_assessor_item"),
            models.Index(fields=["kind", "unit", "assessor"], name="skip_unit"),
        ]
        ordering = ["campaign", "created_at", "id"]

    def __str__(self) -> str:
        return f"{self.kind} {self.unit} skipped ({self.reason})"


class JudgmentChange(models.Model):
    """One change of a judgment's grade by its assessor (their own-judgments page); the judgment
    holds the latest grade, which is what the estimates use."""

    judgment = models.ForeignKey(Judgment, on_delete=models.CASCADE, related_name="changes")
    old_grade = models.PositiveSmallIntegerField()
    new_grade = models.PositiveSmallIntegerField()
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    changed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["changed_at", "id"]

    def __str__(self) -> str:
        return f"judgment {self.judgment_id}: {self.old_grade} -> {self.new_grade}"
