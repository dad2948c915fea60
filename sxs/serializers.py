"""Input and output shapes of the side-by-side REST API (and its OpenAPI schema)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from labeling.models import Document
from labeling.serializers import TopicOutputSerializer
from sxs.models import SxsAnswer, SxsSettings, SxsTask
from sxs.selectors import task_lists
from sxs.services import MAX_SECONDS, PREFERENCES
from sxs.services.judging import MAX_COMMENT
from sxs.services.setup import MAX_K, SETTING_FIELDS

# Characters of a document's text shown under its title (the page clamps it to two lines).
EXCERPT_CHARACTERS = 320


def excerpt(text: str) -> str:
    """The start of a text, cut at a word, with an ellipsis when cut."""
    flat = " ".join(text.split())
    if len(flat) <= EXCERPT_CHARACTERS:
        return flat
    return flat[:EXCERPT_CHARACTERS].rsplit(" ", 1)[0] + "…"


class SxsSettingsSerializer(serializers.ModelSerializer):
    k = serializers.IntegerField(min_value=1, max_value=MAX_K, required=False)

    class Meta:
        model = SxsSettings
        fields = [*SETTING_FIELDS, "prepared_at"]
        read_only_fields = ["prepared_at"]


class ResultSerializer(serializers.Serializer):
    rank = serializers.IntegerField()
    docno = serializers.CharField()
    title = serializers.CharField()
    url = serializers.CharField()
    excerpt = serializers.CharField()


class SxsItemSerializer(serializers.Serializer):
    task = serializers.IntegerField()
    kind = serializers.CharField(default="sxs")
    campaign = serializers.IntegerField()
    lease_expires_at = serializers.DateTimeField()
    topic = TopicOutputSerializer()
    k = serializers.IntegerField()
    left = ResultSerializer(many=True, help_text="the list shown left, best first (system not named)")
    right = ResultSerializer(many=True, help_text="the list shown right, best first")

    @staticmethod
    def of(task: SxsTask, k: int) -> dict[str, Any]:
        left, right = task_lists(task)
        return SxsItemSerializer(
            {
                "task": task.pk,
                "kind": "sxs",
                "campaign": task.campaign_id,
                "lease_expires_at": task.lease_expires_at,
                "topic": task.topic,
                "k": k,
                "left": _results(left),
                "right": _results(right),
            }
        ).data


def _results(documents: list[Document]) -> list[dict[str, Any]]:
    return [
        {
            "rank": rank,
            "docno": document.docno,
            "title": document.title,
            "url": document.url,
            "excerpt": excerpt(document.text),
        }
        for rank, document in enumerate(documents, start=1)
    ]


class SxsAnswerInputSerializer(serializers.Serializer):
    preference = serializers.ChoiceField(
        choices=list(PREFERENCES),
        help_text="as displayed: -2 left much better, -1 left better, 0 about the same, "
        "1 right better, 2 right much better",
    )
    seconds = serializers.FloatField(min_value=0, max_value=MAX_SECONDS, required=False, allow_null=True)
    comment = serializers.CharField(max_length=MAX_COMMENT, required=False, allow_blank=True, default="")


class SxsAnswerOutputSerializer(serializers.ModelSerializer):
    preference = serializers.IntegerField(source="shown", help_text="as displayed (negative = left better)")
    preference_a = serializers.IntegerField(
        source="preference", help_text="about the systems: negative = system A better"
    )

    class Meta:
        model = SxsAnswer
        fields = ["id", "task", "preference", "preference_a", "seconds", "comment", "created_at"]


class SkipInputSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=500)
