"""The sampling engine's tables: each campaign's sampling state and estimate snapshots, and the
model judges (their versions, runs, calls, labels and calibrations). They were the core's and
keep its table names (`db_table`)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from labeling.models import Campaign


class SamplingState(models.Model):
    """The campaign's current label model, costs and sampling distribution (one row, versioned).

    `arrays` holds an uncompressed .npz: ``q`` (per topic, or per topic and slot), ``cost``,
    ``expected``; the topic and slot order is the pool arrays' of `pool_version`.
    """

    campaign = models.OneToOneField(Campaign, on_delete=models.CASCADE, related_name="sampling_state")
    version = models.PositiveIntegerField(default=0)
    pool_version = models.PositiveIntegerField(default=0)
    fingerprint = models.CharField(max_length=128, blank=True)
    level = models.CharField(max_length=8, default="query")
    arrays = models.BinaryField()
    label_model = models.JSONField(default=dict)
    cost_model = models.JSONField(default=dict)
    weight_bounds = models.JSONField(default=dict, help_text="item level: max P/Q per system so far")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "labeling_samplingstate"

    def __str__(self) -> str:
        return f"sampling state {self.version} of campaign {self.campaign_id}"


class EstimateSnapshot(models.Model):
    """The estimates of every system and metric after a recompute that changed anything."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="snapshots")
    created_at = models.DateTimeField(auto_now_add=True)
    fingerprint = models.CharField(max_length=128)
    level = models.CharField(max_length=8)
    spent = models.FloatField()
    budget = models.FloatField()
    judgments = models.PositiveIntegerField()
    draws = models.PositiveIntegerField(help_text="draws counted (their topic or item fully judged)")
    data = models.JSONField(help_text="{systems: [...], difference: {...} or null}")

    class Meta:
        db_table = "labeling_estimatesnapshot"
        ordering = ["campaign", "created_at", "id"]
        indexes = [models.Index(fields=["campaign", "created_at"], name="snapshot_campaign_time")]

    def __str__(self) -> str:
        return f"estimates of campaign {self.campaign_id} at {self.created_at:%Y-%m-%d %H:%M:%S}"


class Judge(models.Model):
    """A model judge of a campaign (an LLM with a prompt, a cross-encoder, an earlier ranker's
    scores): its name and version, shown wherever its labels are used. `kind` names where its
    labels come from, a kind registered in `sampling.judge_kinds` (uploaded files, an
    OpenAI-compatible endpoint the worker asks, the built-in lexical judge): the core keeps
    the name only, as `Campaign.judging_mode`. An endpoint's API key is never stored:
    `api_key_variable` names the environment variable that holds it (one
    settings.JUDGE_API_KEY_HOSTS binds)."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="judges")
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=16, default="upload")
    model = models.CharField(max_length=200, blank=True, help_text="e.g. DeepSeek-V3, gpt-4o-2024-08-06")
    prompt = models.TextField(blank=True, help_text="the prompt text, or its name and hash")
    version_date = models.DateField(null=True, blank=True, help_text="when the labels were made")
    notes = models.TextField(blank=True)
    shares_model_with = models.CharField(
        max_length=500,
        blank=True,
        help_text="systems under evaluation built on the same model (comma-separated)",
    )
    simulated = models.BooleanField(default=False, help_text="labels simulated from human grades (demo)")
    version = models.PositiveIntegerField(
        default=1, help_text="raised by every edit of what the judge is asked"
    )
    base_url = models.CharField(
        max_length=500, blank=True, help_text="endpoint: e.g. http://localhost:8000/v1"
    )
    api_key_variable = models.CharField(
        max_length=100, blank=True, help_text="endpoint: the environment variable that holds the API key"
    )
    with_probabilities = models.BooleanField(default=False, help_text="endpoint: ask for log-probabilities")
    max_tokens = models.PositiveIntegerField(default=64)
    concurrency = models.PositiveSmallIntegerField(default=4)
    requests_per_minute = models.FloatField(default=0.0, help_text="0: no limit")
    price_in_per_1k = models.FloatField(default=0.0, help_text="price per 1,000 prompt tokens")
    price_out_per_1k = models.FloatField(default=0.0, help_text="price per 1,000 answer tokens")
    cost_cap = models.FloatField(
        null=True, blank=True, help_text="stop its runs once its total cost reaches this"
    )
    thresholds = models.JSONField(
        null=True, blank=True, help_text="lexical: cut points fitted at its first run of this version"
    )
    kind_settings = models.JSONField(
        default=dict,
        blank=True,
        help_text="the values of its kind's own settings that have no column (JudgeKind.settings)",
    )
    chosen_for_sampling = models.BooleanField(
        default=False, help_text="the judge the judged strategy uses (else the first judge with labels)"
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "labeling_judge"
        constraints = [models.UniqueConstraint(fields=["campaign", "name"], name="judge_name_unique")]
        ordering = ["campaign", "created_at", "id"]

    def __str__(self) -> str:
        return f"judge {self.name} of campaign {self.campaign_id}"


class JudgeVersion(models.Model):
    """What a judge was asked in one version (model, prompt, endpoint settings that change the
    answers); labels and cached answers name their version."""

    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    model = models.CharField(max_length=200, blank=True)
    prompt = models.TextField(blank=True)
    asked_with = models.JSONField(
        default=dict, help_text="base_url, with_probabilities, max_tokens, thresholds"
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "labeling_judgeversion"
        constraints = [models.UniqueConstraint(fields=["judge", "number"], name="judge_version_unique")]
        ordering = ["judge", "number"]


class JudgeRun(models.Model):
    """One run of a judge over the campaign's pool in the worker, in chunks: its progress,
    tokens, cost, refusals and last error; `lease_until` keeps two workers off one run."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        CANCELLED = "cancelled", "Cancelled"
        COST_CAP = "cost_cap", "Stopped at the cost cap"
        FAILED = "failed", "Failed"

    ACTIVE = (Status.QUEUED, Status.RUNNING)

    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="runs")
    version = models.PositiveIntegerField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    pairs_total = models.PositiveIntegerField(default=0, help_text="pool pairs this run covers")
    cached = models.PositiveIntegerField(default=0, help_text="pairs answered before this run (no request)")
    labels = models.PositiveIntegerField(default=0)
    refusals = models.PositiveIntegerField(default=0)
    errors = models.PositiveIntegerField(default=0)
    skipped = models.PositiveIntegerField(default=0, help_text="pairs not sent: nothing to judge in the data")
    requests = models.PositiveIntegerField(default=0)
    tokens_in = models.PositiveBigIntegerField(default=0)
    tokens_out = models.PositiveBigIntegerField(default=0)
    cost = models.FloatField(default=0.0)
    last_error = models.TextField(blank=True)
    failures_in_a_row = models.PositiveIntegerField(
        default=0, help_text="requests that failed after their retries, one after another, across steps"
    )
    lost_steps = models.PositiveSmallIntegerField(
        default=0, help_text="steps in a row whose worker died before finishing them"
    )
    cancel_requested = models.BooleanField(default=False)
    lease_until = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "labeling_judgerun"
        ordering = ["judge", "-created_at", "-id"]


class JudgeCall(models.Model):
    """The answer cache of endpoint and lexical judges: one row per (judge, version, qid, docno)
    once answered (a label or a refusal; an error or a pair not sent is retried by the next run)."""

    class Outcome(models.TextChoices):
        LABEL = "label"
        REFUSAL = "refusal"
        ERROR = "error"
        # Not sent: the campaign's data has nothing to judge (a document or topic without text, a
        # prompt over the ceiling). Not the model's answer, so not cached: the next run asks again.
        SKIPPED = "skipped", "not sent"

    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="calls")
    version = models.PositiveIntegerField()
    qid = models.CharField(max_length=64)
    docno = models.CharField(max_length=200)
    outcome = models.CharField(max_length=8, choices=Outcome.choices)
    grade = models.SmallIntegerField(null=True, blank=True)
    probs = models.JSONField(null=True, blank=True)
    text = models.TextField(blank=True, help_text="the answer (first 2,000 characters), or the error")
    tokens_in = models.PositiveIntegerField(default=0)
    tokens_out = models.PositiveIntegerField(default=0)
    seconds = models.FloatField(default=0.0)
    cost = models.FloatField(default=0.0)
    run = models.ForeignKey(JudgeRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "labeling_judgecall"
        constraints = [
            models.UniqueConstraint(fields=["judge", "version", "qid", "docno"], name="judge_call_unique")
        ]


class JudgeLabel(models.Model):
    """One label of a judge: a grade or a distribution over grades for (qid, docno), kept
    whether or not the pair is in the pool. A calibration-set row also holds the human grade
    (the same judge on other topics): `human_grade` is set only there."""

    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="labels")
    qid = models.CharField(max_length=64)
    docno = models.CharField(max_length=200)
    grade = models.SmallIntegerField(null=True, blank=True)
    probs = models.JSONField(null=True, blank=True)
    judge_class = models.SmallIntegerField(help_text="the grade, or the grade nearest the expected grade")
    rationale = models.TextField(blank=True)
    seconds = models.FloatField(null=True, blank=True)
    cost = models.FloatField(null=True, blank=True)
    human_grade = models.SmallIntegerField(null=True, blank=True, help_text="calibration set only")
    source_file = models.CharField(max_length=200, blank=True)
    version = models.PositiveIntegerField(null=True, blank=True, help_text="the judge version that made it")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "labeling_judgelabel"
        constraints = [
            models.UniqueConstraint(
                fields=["judge", "qid", "docno"],
                condition=Q(human_grade__isnull=True),
                name="judge_label_unique",
            ),
            models.UniqueConstraint(
                fields=["judge", "qid", "docno"],
                condition=Q(human_grade__isnull=False),
                name="judge_calibration_label_unique",
            ),
        ]
        indexes = [models.Index(fields=["judge", "human_grade"])]


class JudgeCalibration(models.Model):
    """The calibration a judged sampling state used: h and sigma per judge class. Each draw
    names its sampling version, so the estimate pairs every draw with the h it was drawn under."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="judge_calibrations")
    judge = models.ForeignKey(Judge, null=True, on_delete=models.SET_NULL, related_name="+")
    sampling_version = models.PositiveIntegerField()
    table = models.JSONField(help_text="source, mean_gain, sd_gain, counts per class (last: no label)")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "labeling_judgecalibration"
        constraints = [
            models.UniqueConstraint(fields=["campaign", "sampling_version"], name="judge_calibration_unique")
        ]
