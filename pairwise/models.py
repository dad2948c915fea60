"""Pairwise judging: a campaign's pairwise settings, the top-k heaps (one per topic and
overlap slot, owned by one assessor), the pair tasks shown to assessors and their answers."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from labeling.models import Campaign, Document, Topic


class PairwiseSettings(models.Model):
    """How a campaign judges in pairs: free pairs, or the HeapSort top-k with its improvements."""

    # The mode itself (pairwise or topk) is the campaign's `judging_mode`; these are its settings.
    campaign = models.OneToOneField(Campaign, on_delete=models.CASCADE, related_name="pairwise_settings")
    k = models.PositiveSmallIntegerField(
        default=10, help_text="top-k: how many documents to select and order"
    )
    documents_per_topic = models.PositiveIntegerField(
        default=50, help_text="n: the best n documents of the fused runs per topic are compared"
    )
    pairs_per_topic = models.PositiveIntegerField(
        default=20, help_text="pairwise mode: random pairs per topic (each judged `overlap` times)"
    )
    use_prior_order = models.BooleanField(
        default=True, help_text="insert documents in the order of the fused runs (else at random)"
    )
    reuse_answers = models.BooleanField(default=True, help_text="never ask a pair twice")
    use_transitivity = models.BooleanField(
        default=True, help_text="never ask a pair whose order follows from earlier answers"
    )
    allow_bad_shortcut = models.BooleanField(
        default=True, help_text="offer a one-click 'clearly irrelevant' answer per side"
    )
    prepared_at = models.DateTimeField(null=True, blank=True, help_text="when heaps or pair tasks were made")

    class Meta:
        verbose_name_plural = "pairwise settings"

    def __str__(self) -> str:
        return f"pairwise settings of campaign {self.campaign_id}"


class TopKHeap(models.Model):
    """One HeapSort top-k procedure: a topic, an overlap slot and, once claimed, its assessor.

    `state` is `estimation.topk.state.TopKState.to_json()`, written after every answer; the heap
    stays with the assessor who answered in it (resumable another day); an untouched heap
    whose lease expired can be claimed by someone else.
    """

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="topk_heaps")
    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="+")
    slot = models.PositiveSmallIntegerField(default=0)
    assessor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="topk_heaps"
    )
    state = models.JSONField()
    steps = models.PositiveIntegerField(default=0, help_text="answers and bad marks in the state's log")
    judgments = models.PositiveIntegerField(default=0, help_text="pairwise answers given")
    done = models.BooleanField(default=False)
    order = models.JSONField(default=list, blank=True, help_text="the top-k docnos, best first, once done")
    leased_at = models.DateTimeField(null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["topic", "slot"], name="topk_heap_topic_slot_unique"),
            models.UniqueConstraint(
                fields=["topic", "assessor"],
                condition=Q(assessor__isnull=False),
                name="topk_heap_one_per_assessor",
            ),
        ]
        ordering = ["campaign", "topic", "slot"]

    def __str__(self) -> str:
        return f"top-k heap {self.topic_id}/{self.slot}"


class PairTask(models.Model):
    """One pair on screen: the pending pair of a heap, or a pre-drawn pair (pairwise mode).

    `left` and `right` are as displayed; `swapped` says the display reversed the pair as the
    procedure (or the draw) asked it, so position bias can be measured.
    """

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="pair_tasks")
    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="+")
    heap = models.ForeignKey(TopKHeap, null=True, blank=True, on_delete=models.CASCADE, related_name="tasks")
    step = models.PositiveIntegerField(default=0, help_text="top-k: the heap's log length when asked")
    slot = models.PositiveSmallIntegerField(default=0)
    order = models.PositiveIntegerField(default=0, help_text="pairwise mode: serving order")
    left = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+")
    right = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+")
    swapped = models.BooleanField(default=False)
    assessor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="pair_tasks"
    )
    leased_at = models.DateTimeField(null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    answered_at = models.DateTimeField(null=True, blank=True)
    superseded = models.BooleanField(
        default=False, help_text="top-k: no longer the heap's pending pair (after an undo or a new owner)"
    )

    class Meta:
        indexes = [models.Index(fields=["campaign", "answered_at", "order"], name="pair_task_open")]

    def __str__(self) -> str:
        return f"pair task {self.pk}"


class Comparison(models.Model):
    """An assessor's answer to a pair task, relative to the sides as displayed."""

    class Outcome(models.TextChoices):
        LEFT = "left", "Left more relevant"
        TIE = "tie", "Tie"
        RIGHT = "right", "Right more relevant"
        LEFT_BAD = "left_bad", "Left clearly irrelevant"
        RIGHT_BAD = "right_bad", "Right clearly irrelevant"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="comparisons")
    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="+")
    task = models.OneToOneField(
        PairTask, null=True, blank=True, on_delete=models.SET_NULL, related_name="comparison"
    )
    heap = models.ForeignKey(
        TopKHeap, null=True, blank=True, on_delete=models.CASCADE, related_name="comparisons"
    )
    step = models.PositiveIntegerField(default=0, help_text="top-k: index of this answer in the heap's log")
    assessor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="comparisons"
    )
    left = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+")
    right = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+")
    swapped = models.BooleanField(default=False)
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    seconds = models.FloatField(null=True, blank=True, help_text="time spent, pauses excluded")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            models.Index(fields=["campaign", "assessor", "created_at"], name="comparison_assessor_time")
        ]
        ordering = ["campaign", "created_at", "id"]

    def __str__(self) -> str:
        return f"{self.left_id} vs {self.right_id}: {self.outcome}"
