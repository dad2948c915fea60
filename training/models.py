"""A training-data campaign's settings, its feature pool (stored as arrays), and its rounds of
selected (query, document) pairs, each of which the assessors judge as a graded task."""

from __future__ import annotations

from django.db import models

from estimation.training.selection import DEFAULT_DOCS_PER_QUERY, SELECTION_RULES
from labeling.models import Campaign, Task


class TrainingSettings(models.Model):
    """How the campaign selects: the strategy, its sizes and whether it draws (section 6)."""

    campaign = models.OneToOneField(Campaign, on_delete=models.CASCADE, related_name="training_settings")
    strategy = models.CharField(
        max_length=16, choices=[(name, name) for name in SELECTION_RULES], default="elo_qd"
    )
    docs_per_query = models.PositiveIntegerField(default=DEFAULT_DOCS_PER_QUERY)
    cutoff = models.PositiveIntegerField(default=10, help_text="K of the DCG the selection targets")
    ensemble = models.PositiveIntegerField(default=8, help_text="bootstrap members N")
    round_size = models.PositiveIntegerField(default=50, help_text="labels selected per round")
    drawn = models.BooleanField(
        default=False, help_text="draw with recorded inclusion probabilities instead of taking the top"
    )

    class Meta:
        verbose_name_plural = "training settings"

    def __str__(self) -> str:
        return f"training settings of campaign {self.campaign_id}"


class TrainingPool(models.Model):
    """The uploaded feature pool (and optional test queries and team scores) as compressed NumPy
    archives: one row per (query, document), never a row per feature value. A pool of about a
    million rows x 136 features is ~0.5 GB of float32 before compression; beyond that, keep the
    pool on disk and use `python -m estimation select-training` instead."""

    campaign = models.OneToOneField(Campaign, on_delete=models.CASCADE, related_name="training_pool")
    pool = models.BinaryField(
        help_text="npz: features, grades (-1 unlabeled), query_ids, query_offsets, doc_ids"
    )
    pool_filename = models.CharField(max_length=500, blank=True)
    rows = models.PositiveIntegerField(default=0)
    queries = models.PositiveIntegerField(default=0)
    base_labeled = models.PositiveIntegerField(default=0, help_text="rows labeled before judging")
    test = models.BinaryField(null=True, blank=True, help_text="npz of the labeled held-out test queries")
    test_filename = models.CharField(max_length=500, blank=True)
    scores = models.BinaryField(null=True, blank=True, help_text="npy of the team's N scores per pool row")
    scores_filename = models.CharField(max_length=500, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"training pool of campaign {self.campaign_id} ({self.rows} rows)"


class TrainingRound(models.Model):
    """One round: the ensemble fitted on the labels so far, the selection made from it."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="training_rounds")
    number = models.PositiveIntegerField()
    strategy = models.CharField(max_length=16)
    seed = models.BigIntegerField()
    labels_before = models.PositiveIntegerField(help_text="labeled pool rows the ensemble was fitted on")
    selected = models.PositiveIntegerField(default=0)
    model = models.CharField(max_length=64, help_text="what scored the pool: lightgbm x N, uploaded, none")
    fit_seconds = models.FloatField(default=0.0)
    select_seconds = models.FloatField(default=0.0)
    test_dcg = models.FloatField(
        null=True, blank=True, help_text="mean test DCG@10 of a model fitted on the labels before this round"
    )
    versions = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["campaign", "number"], name="training_round_once")]
        ordering = ["campaign", "number"]

    def __str__(self) -> str:
        return f"round {self.number} of campaign {self.campaign_id}"


class TrainingSelection(models.Model):
    """One selected (query, document) pair, in selection order, and the task it became."""

    round = models.ForeignKey(TrainingRound, on_delete=models.CASCADE, related_name="selections")
    order = models.PositiveIntegerField()
    qid = models.CharField(max_length=64)
    docid = models.CharField(max_length=200)
    row = models.PositiveIntegerField(help_text="the pool row")
    el_query = models.FloatField(null=True, blank=True)
    el_doc = models.FloatField(null=True, blank=True)
    # Drawn variant only (None when the round took the top items): the item's marginal
    # probability of being selected in its round, and for two-stage rules its two factors.
    inclusion_probability = models.FloatField(null=True, blank=True, help_text="drawn variant only")
    query_inclusion_probability = models.FloatField(
        null=True, blank=True, help_text="drawn two-stage: the query's inclusion probability"
    )
    document_inclusion_probability_given_query = models.FloatField(
        null=True, blank=True, help_text="drawn two-stage: the item's inclusion probability given its query"
    )
    task = models.OneToOneField(Task, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["round", "order"]

    def __str__(self) -> str:
        return f"{self.qid}/{self.docid} (round {self.round_id})"
