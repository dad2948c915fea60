"""The graded mode's gold questions: the settings, the known-grade items and the assessors'
answers. They were the core's tables and keep their names (`db_table`)."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from labeling.models import Campaign, Document, Task, Topic


class GoldSettings(models.Model):
    """Gold questions of a campaign: how many are mixed into each assessor's stream, how many
    come first as a qualification, and the accuracy below which an assessor is paused."""

    campaign = models.OneToOneField(Campaign, on_delete=models.CASCADE, related_name="gold_settings")
    share = models.FloatField(default=0.0, help_text="share of an assessor's items that are gold (0 = none)")
    qualification = models.PositiveIntegerField(
        default=0, help_text="gold questions an assessor answers before any real item"
    )
    min_accuracy = models.FloatField(
        default=0.0, help_text="exact-grade accuracy below which an assessor is paused"
    )
    min_answers = models.PositiveIntegerField(default=5, help_text="gold answers before the accuracy counts")

    class Meta:
        verbose_name_plural = "gold settings"
        db_table = "labeling_goldsettings"

    def __str__(self) -> str:
        return f"gold settings of campaign {self.campaign_id}"


class GoldItem(models.Model):
    """A (topic, document) whose grade is known: from imported qrels or from assessors who all
    agreed. Shown to assessors like any item; their answers measure them, not the runs."""

    class Source(models.TextChoices):
        QRELS = "qrels", "Imported qrels"
        AGREED = "agreed", "Assessors agreed"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="gold_items")
    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="+")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+")
    grade = models.PositiveSmallIntegerField()
    source = models.CharField(max_length=8, choices=Source.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "labeling_golditem"
        constraints = [
            models.UniqueConstraint(fields=["campaign", "topic", "document"], name="gold_item_once")
        ]

    def __str__(self) -> str:
        return f"gold {self.topic_id}/{self.document_id} = {self.grade}"


class GoldAnswer(models.Model):
    """An assessor's answer to a gold question, and whether it matched the known grade."""

    gold = models.ForeignKey(GoldItem, on_delete=models.CASCADE, related_name="answers")
    task = models.OneToOneField(Task, null=True, on_delete=models.SET_NULL, related_name="gold_answer")
    assessor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="gold_answers"
    )
    grade = models.PositiveSmallIntegerField()
    correct = models.BooleanField()
    seconds = models.FloatField(null=True, blank=True)
    counted = models.BooleanField(default=True, help_text="false once the coordinator resumed the assessor")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "labeling_goldanswer"
        indexes = [models.Index(fields=["assessor", "gold"], name="gold_answer_assessor")]

    def __str__(self) -> str:
        return f"gold answer {self.grade} ({'right' if self.correct else 'wrong'})"
