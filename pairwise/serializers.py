"""Input and output shapes of the pairwise REST API (and its OpenAPI schema)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from labeling.serializers import AgreementSerializer, DocumentOutputSerializer, TopicOutputSerializer
from labeling.strict_json import StrictModelSerializer, StrictSerializer
from pairwise.models import Comparison, PairTask, PairwiseSettings
from pairwise.services import OUTCOMES
from pairwise.services.setup import SETTING_FIELDS


class PairwiseSettingsSerializer(StrictModelSerializer):
    mode = serializers.CharField(
        source="campaign.judging_mode",
        required=False,
        help_text="pairwise or topk: the campaign's judging mode",
    )

    class Meta:
        model = PairwiseSettings
        fields = ["mode", *SETTING_FIELDS, "prepared_at"]
        read_only_fields = ["prepared_at"]


class PairProgressSerializer(StrictSerializer):
    judgments = serializers.IntegerField(help_text="answers given in this heap so far")
    documents = serializers.IntegerField(help_text="n: documents of the heap")
    k = serializers.IntegerField()


class PairOutputSerializer(StrictSerializer):
    task = serializers.IntegerField(source="pk")
    kind = serializers.CharField(default="pair")
    mode = serializers.CharField(help_text="pairwise or topk")
    campaign = serializers.IntegerField(source="campaign_id")
    lease_expires_at = serializers.DateTimeField()
    topic = TopicOutputSerializer()
    left = DocumentOutputSerializer()
    right = DocumentOutputSerializer()
    allow_bad_shortcut = serializers.BooleanField()
    progress = PairProgressSerializer(allow_null=True)

    @staticmethod
    def of(task: PairTask, pairwise: PairwiseSettings) -> dict[str, Any]:
        progress = None
        if task.heap is not None:
            progress = {
                "judgments": task.heap.judgments,
                "documents": len(task.heap.state["documents"]),
                "k": task.heap.state["k"],
            }
        task.kind = "pair"  # type: ignore[attr-defined]  # attributes the output serializer reads, set for it
        task.mode = task.campaign.judging_mode  # type: ignore[attr-defined]  # attributes the output serializer reads, set for it
        task.allow_bad_shortcut = pairwise.allow_bad_shortcut  # type: ignore[attr-defined]  # attributes the output serializer reads, set for it
        task.progress = progress  # type: ignore[attr-defined]  # attributes the output serializer reads, set for it
        return PairOutputSerializer(task).data


class PairAnswerInputSerializer(StrictSerializer):
    outcome = serializers.ChoiceField(choices=list(OUTCOMES), help_text="relative to the sides as displayed")
    seconds = serializers.FloatField(min_value=0, required=False, allow_null=True)


class ComparisonOutputSerializer(StrictModelSerializer):
    left = serializers.CharField(source="left.docno")
    right = serializers.CharField(source="right.docno")

    class Meta:
        model = Comparison
        fields = ["id", "task", "left", "right", "outcome", "seconds", "swapped", "created_at"]


class TopKOrderSerializer(StrictSerializer):
    heap = serializers.IntegerField(source="heap_id", help_text="the id .../heaps/{heap}/release/ takes")
    topic = serializers.CharField()
    assessor = serializers.CharField(allow_null=True)
    slot = serializers.IntegerField()
    order = serializers.ListField(child=serializers.CharField())
    judgments = serializers.IntegerField()
    done = serializers.BooleanField()
    n_documents = serializers.IntegerField()
    updated_at = serializers.DateTimeField(help_text="the last answer, claim or release")


class KappaRunSerializer(StrictSerializer):
    system = serializers.CharField()
    metric_ndcg = serializers.CharField()
    kappa_ndcg = serializers.FloatField()
    kappa_err = serializers.FloatField()
    topics = serializers.IntegerField()
    per_topic = serializers.DictField(child=serializers.DictField(child=serializers.FloatField()))


class OwnOrderSerializer(StrictSerializer):
    assessor = serializers.CharField()
    order = serializers.ListField(child=serializers.CharField())
    done = serializers.BooleanField()


class MergedOrderSerializer(StrictSerializer):
    topic = serializers.CharField()
    order = serializers.ListField(child=serializers.CharField())
    scores = serializers.ListField(child=serializers.FloatField())
    comparisons = serializers.IntegerField()
    not_compared = serializers.IntegerField(
        help_text="the topic's documents no answer compared yet (not ranked)"
    )
    assessors = serializers.ListField(child=serializers.CharField())
    own = OwnOrderSerializer(many=True)


class ResultsSerializer(StrictSerializer):
    mode = serializers.CharField()
    k = serializers.IntegerField()
    topk = TopKOrderSerializer(many=True)
    kappa = KappaRunSerializer(many=True)
    merged = MergedOrderSerializer(many=True)
    agreement = AgreementSerializer()
